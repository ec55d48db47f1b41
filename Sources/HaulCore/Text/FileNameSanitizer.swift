import Foundation

/// Makes names from untrusted sources (servers, URLs) safe to create inside a target directory.
package enum FileNameSanitizer {
    /// The longest name most file systems accept, in UTF-8 bytes.
    package static let maximumByteCount = 255

    /// Turns an untrusted name (from a server or URL) into one safe to create inside a target
    /// directory.
    ///
    /// Keeps only the last non-empty path component (split on "/" and "\\"); drops NUL, control
    /// characters (C0, DEL, C1), Unicode format characters (category Cf, e.g. U+202E which can
    /// disguise an extension) and line/paragraph separators; replaces characters invalid on
    /// common file systems (`< > : " | ? *`) with "_"; trims whitespace, trailing dots and
    /// spaces, and leading dots so the result is never hidden; refuses "", "." and ".."; and
    /// limits the result to 255 UTF-8 bytes, truncating the stem but keeping a short extension,
    /// never splitting a character. Returns nil if nothing usable remains.
    package static func sanitize(_ raw: String) -> String? {
        // Split on scalars, not Characters: a "prepended concatenation mark" such as U+06DD joins
        // the "/" after it into one grapheme cluster, which a Character split would not see.
        let components = raw.unicodeScalars.split(whereSeparator: { $0 == "/" || $0 == "\\" })
        guard let last = components.last else { return nil }

        var cleaned = String.UnicodeScalarView()
        for scalar in last where !isDropped(scalar) {
            cleaned.append(isReplaced(scalar) ? "_" : scalar)
        }
        var name = trimmed(String(cleaned))
        if name.utf8.count > maximumByteCount {
            name = trimmed(truncated(name))
        }
        // Trimming already strips every dot-only name, so "." and ".." cannot get here.
        return name.isEmpty ? nil : name
    }

    /// The destination name for a response: Content-Disposition (if given and usable), else the
    /// URL's last non-empty path segment (percent-decoded), else `fallback`. Every candidate goes
    /// through `sanitize`; if even `fallback` is unusable, "download" is returned.
    package static func destinationName(
        contentDisposition: String?, url: URL, fallback: String = "download"
    ) -> String {
        if let contentDisposition,
            let suggested = ContentDisposition.fileName(fromHeader: contentDisposition),
            let name = sanitize(suggested)
        {
            return name
        }
        if let segment = lastPathSegment(of: url), let name = sanitize(segment) {
            return name
        }
        return sanitize(fallback) ?? "download"
    }

    // MARK: - Pieces

    /// The last non-empty segment of the still-encoded path, decoded only afterwards so that an
    /// encoded "%2F" cannot shift which segment is last.
    private static func lastPathSegment(of url: URL) -> String? {
        // An absolute URL's encoded path as it is; a relative one's resolved against its base.
        let encodedPath: String
        if url.baseURL == nil, #available(macOS 13, iOS 16, tvOS 16, watchOS 9, *) {
            encodedPath = url.path(percentEncoded: true)
        } else {
            encodedPath = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        }
        guard let segment = encodedPath.split(separator: "/").last else { return nil }
        // Without a "%" there is nothing to decode (and Foundation's decoding is not cheap).
        guard segment.utf8.contains(UInt8(ascii: "%")) else { return String(segment) }
        return segment.removingPercentEncoding ?? String(segment)
    }

    private static func isDropped(_ scalar: Unicode.Scalar) -> Bool {
        // Printable ASCII is none of these, and most names are all printable ASCII: no table read.
        if (0x20..<0x7F).contains(scalar.value) { return false }
        return switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate: true
        default: scalar.properties.isNoncharacterCodePoint
        }
    }

    /// Characters Windows file systems (NTFS, FAT, exFAT — often mounted on Linux too) refuse.
    private static func isReplaced(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "<", ">", ":", "\"", "|", "?", "*": true
        default: false
        }
    }

    /// Strips whitespace on both ends, leading dots, and trailing dots and spaces, until stable:
    /// ". .x" must end as "x", not ".x".
    private static func trimmed(_ name: String) -> String {
        var scalars = Substring(name).unicodeScalars
        while let first = scalars.first, first == "." || first.properties.isWhitespace {
            scalars.removeFirst()
        }
        while let last = scalars.last, last == "." || last.properties.isWhitespace {
            scalars.removeLast()
        }
        return String(scalars)
    }

    /// Cuts `name` to `maximumByteCount` UTF-8 bytes, keeping an extension of up to 16 bytes.
    private static func truncated(_ name: String) -> String {
        let maximumExtensionBytes = 16
        var stem = Substring(name)
        var pathExtension = Substring()
        if let dot = name.lastIndex(of: "."), dot != name.startIndex,
            name.utf8[dot...].count <= maximumExtensionBytes
        {
            stem = name[..<dot]
            pathExtension = name[dot...]
        }
        return prefix(of: stem, withinBytes: maximumByteCount - pathExtension.utf8.count) + pathExtension
    }

    /// The longest start of `name` that fits in `budget` UTF-8 bytes, cut between characters (so
    /// never inside one), or between scalars when even the first character does not fit.
    package static func prefix(of name: some StringProtocol, withinBytes budget: Int) -> String {
        let text = Substring(name)
        let kept = prefix(ofCharacters: text, withinBytes: budget)
        // A single enormous grapheme (say, a letter with thousands of combining marks) would
        // leave nothing; cut between scalars instead, which is still valid UTF-8.
        return kept.isEmpty ? prefix(ofScalars: text, withinBytes: budget) : kept
    }

    private static func prefix(ofCharacters text: Substring, withinBytes budget: Int) -> String {
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            guard used + size <= budget else { break }
            result.append(character)
            used += size
        }
        return result
    }

    private static func prefix(ofScalars text: Substring, withinBytes budget: Int) -> String {
        var result = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let size = UTF8.width(scalar)
            guard used + size <= budget else { break }
            result.append(scalar)
            used += size
        }
        return String(result)
    }
}
