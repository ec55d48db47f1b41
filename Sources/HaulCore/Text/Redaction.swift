import Foundation

/// What of a request may be shown or kept: a URL without its password, headers without their
/// credentials. Every output (events, `--json`, `queue list`, messages) shows requests through
/// this, and the queue keeps no credential of a download that can no longer run.
package enum Redaction {
    /// Header fields whose values are credentials (compared lowercased): the ones a redirect to
    /// another origin also drops.
    package static let secretHeaderNames = Set(RedirectPolicy.credentialHeaders.map { $0.lowercased() })

    /// The URL with `user:password@` shown as `user:***@` (a user alone is kept).
    package static func url(_ text: String) -> String {
        replacingPassword(in: text, with: "***")
    }

    /// The URL as text with `user:password@` shown as `user:***@`.
    package static func url(_ url: URL) -> String {
        self.url(url.absoluteString)
    }

    /// The URL without its password (`user:password@` becomes `user@`).
    package static func withoutPassword(_ text: String) -> String {
        replacingPassword(in: text, with: nil)
    }

    /// The header fields without credentials.
    package static func publicHeaders(_ fields: [HTTPHeaders.Field]) -> [HTTPHeaders.Field] {
        fields.filter { !secretHeaderNames.contains($0.name.lowercased()) }
    }

    private static func replacingPassword(in text: String, with replacement: String?) -> String {
        // No user info without an '@': most URLs are returned as they are, unparsed.
        guard text.utf8.contains(UInt8(ascii: "@")) else { return text }
        if var components = URLComponents(string: text), components.password != nil {
            components.password = replacement
            if let string = components.string { return string }
        }
        // Not a URL Foundation reads (an unencoded '@' in the password, an odd scheme): the
        // password is cut out of the text as written.
        guard let password = passwordRange(in: text) else { return text }
        var result = text
        if let replacement {
            result.replaceSubrange(password, with: replacement)
        } else {
            // `user:password@` becomes `user@`: the ':' goes too.
            result.removeSubrange(text.index(before: password.lowerBound)..<password.upperBound)
        }
        return result
    }

    /// Where the password of `scheme://user:password@host…` lies in `text`, read as written: the
    /// authority runs to the first `/`, `?` or `#` after the last `@` that precedes it, the user
    /// info to that `@`, the password from the user info's first `:`.
    static func passwordRange(in text: String) -> Range<String.Index>? {
        guard let scheme = text.range(of: "://") else { return nil }
        let rest = text[scheme.upperBound...]
        // The last '@' before the path: a password may hold '@' and '/' rarely, a host never '@'.
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var at = rest[..<authorityEnd].lastIndex(of: "@")
        if at == nil, let later = rest.lastIndex(of: "@") { at = later }
        guard let at, let colon = rest[..<at].firstIndex(of: ":") else { return nil }
        let start = rest.index(after: colon)
        return start < at ? start..<at : nil
    }

    /// The secrets a URL (or proxy) text carries: its password as written and percent-decoded.
    package static func secrets(inURL text: String) -> [String] {
        guard let range = passwordRange(in: text) else { return [] }
        let raw = String(text[range])
        return Array(Set([raw, raw.removingPercentEncoding ?? raw]))
    }

    /// The secrets a credential header's value carries: the value, and its token after a scheme
    /// (`Basic …`, `Bearer …`).
    package static func secrets(inHeaderValue value: String) -> [String] {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        var found = [trimmed]
        if let space = trimmed.firstIndex(of: " ") {
            found.append(String(trimmed[trimmed.index(after: space)...]).trimmingCharacters(in: .whitespaces))
        }
        return found.filter { !$0.isEmpty }
    }

    /// `text` with every one of `secrets` shown as `***`: for messages that come from elsewhere
    /// (libcurl's error text echoes a proxy URL it cannot read, password and all). Secrets of
    /// fewer than four characters are hidden only where they stand as a password (`:secret@`),
    /// so that a one-letter password does not blank out every such letter of a message.
    package static func text(_ text: String, hiding secrets: [String]) -> String {
        var result = text
        for secret in Set(secrets).sorted(by: { $0.count > $1.count }) where !secret.isEmpty {
            if secret.count >= 4 {
                result = result.replacingOccurrences(of: secret, with: "***")
            } else {
                result = result.replacingOccurrences(of: ":" + secret + "@", with: ":***@")
            }
        }
        return result
    }
}
