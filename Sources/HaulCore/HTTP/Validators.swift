import Foundation

/// What identifies one version of a remote resource: its entity tag and modification date.
package struct Validators: Sendable, Equatable, Codable {
    /// The entity tag (strong or weak); nil when the server sent none.
    package var etag: EntityTag?
    /// The `Last-Modified` date as the server wrote it; nil when it sent none.
    package var lastModified: String?

    /// Validators with this entity tag and date.
    package init(etag: EntityTag? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// No validator at all: nothing can guard a resume.
    package static let none = Validators()

    /// The value for `If-Range`: a strong entity tag, else the `Last-Modified` date (RFC 9110 §13.1.5).
    /// A weak tag can never be used: a server must not honour it, so asking would only waste a 200.
    /// Nor can a value with bytes beyond ASCII: a request header goes out as UTF-8, so such a tag
    /// could not be sent back as the server wrote it, and how an engine decoded it is not proof
    /// of its bytes; the resume is proven by re-fetching an overlap instead.
    package var ifRangeValue: String? {
        switch guardingValidator {
        case .etag(let etag): return etag.headerValue
        case .lastModified(let date): return date
        case nil: return nil
        }
    }

    /// The validator `If-Range` carries, if one can.
    private enum Guard {
        case etag(EntityTag)
        case lastModified(String)
    }

    private var guardingValidator: Guard? {
        if let etag, !etag.isWeak, etag.headerValue.unicodeScalars.allSatisfy(\.isASCII) { return .etag(etag) }
        if let lastModified, lastModified.unicodeScalars.allSatisfy(\.isASCII), HTTPDate.parse(lastModified) != nil {
            return .lastModified(lastModified)
        }
        return nil
    }

    /// Whether a resumed request can rely on `If-Range` to keep versions apart.
    package var canGuardResume: Bool { ifRangeValue != nil }

    /// Whether a response shows the validator that `ifRangeValue` sent: only then does a 206 prove
    /// that the server evaluated `If-Range` against this version. A server (or a cache) that ignores
    /// `If-Range` and leaves its validators out could otherwise splice another version's bytes.
    package func isShown(by response: Validators) -> Bool {
        switch guardingValidator {
        case .etag(let etag):
            guard let theirs = response.etag else { return false }
            return etag.stronglyMatches(theirs)
        case .lastModified(let date):
            guard let mine = HTTPDate.parse(date), let theirs = response.lastModified.flatMap(HTTPDate.parse) else { return false }
            return mine == theirs
        case nil:
            return false
        }
    }

    /// Whether a response's validators show a different version than these.
    /// A validator the response leaves out is not evidence of change; one that differs is.
    package func conflicts(with response: Validators) -> Bool {
        if let mine = etag, let theirs = response.etag {
            if mine.isWeak || theirs.isWeak { return !mine.weaklyMatches(theirs) }
            return !mine.stronglyMatches(theirs)
        }
        if let mine = lastModified, let theirs = response.lastModified {
            if let a = HTTPDate.parse(mine), let b = HTTPDate.parse(theirs) { return a != b }
            return mine != theirs
        }
        return false
    }
}
