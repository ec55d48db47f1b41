import HaulChecksum
import HaulCore

/// The one rule naming a sidecar after a name, pure: the name plus the sidecar's suffix when that
/// fits in the file system's name limit, as always; otherwise a shortened stem plus the suffix.
///
/// The shortened stem is the start of the name (cut between characters, so it still reads as the
/// file's) + `~` + the first 32 hex digits of the SHA-256 of the whole name, cut so that every
/// sidecar fits. Two names that share their start but differ anywhere get different stems, and a
/// name that itself ends like a stem (`~` + 32 hex digits) is always shortened too, so a stem can
/// never be some other name kept whole: no two final names share a sidecar.
package enum SidecarName {
    /// Hex digits of the name's SHA-256 in a shortened stem (128 bits).
    static let hashDigits = 32

    /// The name of `sidecar` for a file named `name` in a directory whose file system takes names
    /// of up to `nameMax` bytes.
    package static func of(_ name: String, _ sidecar: Sidecar, nameMax: Int) -> String {
        let whole = name.utf8.count + sidecar.suffix.utf8.count + sidecar.reservedBytes
        guard whole > nameMax || looksShortened(name) else { return name + sidecar.suffix }
        return shortenedStem(of: name, nameMax: nameMax) + sidecar.suffix
    }

    /// The stem every sidecar of `name` shares once shortened: as much of the name's start as
    /// leaves room for the hash and the longest sidecar addition.
    package static func shortenedStem(of name: String, nameMax: Int) -> String {
        let hash = StreamingHash(.sha256)
        Array(name.utf8).withUnsafeBytes { hash.update($0) }
        let marker = "~" + hash.finalizeHex().prefix(hashDigits)
        let budget = max(0, nameMax - Sidecar.longestAddition - marker.utf8.count)
        return FileNameSanitizer.prefix(of: name, withinBytes: budget) + marker
    }

    /// Whether `name` ends as a shortened stem does (`~` and 32 lower-case hex digits).
    static func looksShortened(_ name: String) -> Bool {
        let bytes = Array(name.utf8.suffix(hashDigits + 1))
        guard bytes.count == hashDigits + 1, bytes[0] == UInt8(ascii: "~") else { return false }
        return bytes.dropFirst().allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }
}
