// Server-chosen file names: Content-Disposition parsing, then FileNameSanitizer, and the names
// of a download list. Checks that whatever comes out can only ever name a plain file inside the
// target directory.
// fuzz-sources: Sources/HaulCLIText/DownloadList.swift

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.byte()
    let text = input.remainingText

    if let suggested = ContentDisposition.fileName(fromHeader: text) {
        require(!suggested.isEmpty, "empty suggested name from \(text.debugDescription)")
        if let name = FileNameSanitizer.sanitize(suggested) { checkSafe(name, from: suggested) }
    }
    if let name = FileNameSanitizer.sanitize(text) { checkSafe(name, from: text) }

    // The name actually used for a response, with the header and a hostile URL path.
    let url =
        URL(string: "http://example.invalid/d/" + (text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? ""))
        ?? URL(string: "http://example.invalid/")
    if let url {
        let header = selector & 1 == 0 ? text : nil
        let name = FileNameSanitizer.destinationName(contentDisposition: header, url: url, fallback: text)
        checkSafe(name, from: text)
    }

    // haul -i FILE: every accepted output name is already a safe plain name.
    if selector & 2 != 0 {
        let list = DownloadList(parsing: text)
        for entry in list.entries {
            if let name = entry.name {
                checkSafe(name, from: text)
                require(FileNameSanitizer.sanitize(name) == name, "list name \(name.debugDescription) not stable")
            }
            require(["http", "https"].contains(entry.url.scheme?.lowercased() ?? ""), "list accepted \(entry.url)")
        }
    }
    return 0
}

/// A name that `appendingPathComponent` keeps inside its directory and that every common file
/// system can create.
private func checkSafe(_ name: String, from raw: String) {
    let shown = "\(name.debugDescription) from \(raw.debugDescription)"
    require(!name.isEmpty, "empty name \(shown)")
    require(!name.contains("/") && !name.contains("\\"), "path separator in \(shown)")
    require(!name.utf8.contains(0), "NUL in \(shown)")
    require(name != "." && name != "..", "dot name \(shown)")
    require(!name.hasPrefix("."), "hidden name \(shown)")
    require(name.utf8.count <= FileNameSanitizer.maximumByteCount, "\(name.utf8.count) bytes: \(shown)")
    require(
        !name.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format },
        "control or format character in \(shown)")
    // Sanitizing is idempotent: a safe name is left alone.
    require(FileNameSanitizer.sanitize(name) == name, "not idempotent: \(shown) -> \(String(describing: FileNameSanitizer.sanitize(name)))")
    // Joined to a directory the way OutputLayout does it, it is a direct child of it. Compared as
    // bytes, as the kernel sees the path: NSString's deletingLastPathComponent works on graphemes
    // and misreads a "/" fused with a leading combining mark (a reported quirk, see README).
    let joined = ("/target/dir" as NSString).appendingPathComponent(name)
    require(Array(joined.utf8) == Array("/target/dir/".utf8) + Array(name.utf8), "escapes the directory: \(joined.debugDescription)")
}
