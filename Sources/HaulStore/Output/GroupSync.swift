/// How the data of finished partials is made durable before any of them gets its name.
///
/// One file: fsync (its size changed since its last sync, so fdatasync would cost the same). Several: one syncfs per file system
/// they are on, which writes their data and metadata (and whatever else is dirty there) and waits
/// for the disk once, where each fsync would wait once per file. A syncfs that fails, or a platform
/// without one, falls back to fsync of each file, which says which file failed.
///
/// The trade: syncfs also writes what other programs left dirty on that file system. A group pays
/// for that once, where the per-file syncs of a batch pay for their own data one file at a time
/// (bench/README.md has the measurement).
enum GroupSync {
    /// Syncs `files`; returns each one's failure (nil: its data is durable), in order. Reaches the
    /// `after-data-sync` crash point once. `devices`: each file's device where the caller read it
    /// already (nil: read here).
    static func sync(_ files: [PartialFile], devices: [UInt64?] = []) -> [StoreError?] {
        var failures = [StoreError?](repeating: nil, count: files.count)
        var byDevice: [UInt64?: [Int]] = [:]
        for (index, file) in files.enumerated() {
            let device = index < devices.count ? devices[index] ?? file.device : file.device
            byDevice[device, default: []].append(index)
        }
        for (device, indices) in byDevice {
            if indices.count > 1, device != nil, let first = indices.first, (try? files[first].syncFileSystem()) == true { continue }
            for index in indices {
                do {
                    try files[index].syncWholeFileAlone()
                } catch {
                    failures[index] = error
                }
            }
        }
        if !files.isEmpty { CrashPoint.reach(.afterDataSync) }
        return failures
    }
}
