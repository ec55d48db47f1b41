import Foundation
import HaulCore
import Synchronization

/// The mirrors a run admitted, noted as the segment connections report them (on their threads),
/// read once at the end for the completion's account of what proved their bytes.
final class MirrorLedger: Sendable {
    private let admitted = Mutex<[URL]>([])

    func note(_ note: MirrorNote) {
        guard note.change == .admitted else { return }
        admitted.withLock { if !$0.contains(note.url) { $0.append(note.url) } }
    }

    /// What proved the bytes of the mirrors that served: `digest` (`algorithm:hex`, checked
    /// against the expected value) when the file was verified, else only their probes.
    func proof(digest: String?, verified: Bool) -> String? {
        let urls = admitted.withLock { $0 }
        guard !urls.isEmpty else { return nil }
        let names = urls.map { Redaction.url($0) }.joined(separator: ", ")
        if verified, let digest {
            return "segments from \(names) are proven with the whole file by its \(digest)"
        }
        return "segments from \(names) were proven only by a 64 KiB probe each: no digest of the whole file was checked"
    }
}
