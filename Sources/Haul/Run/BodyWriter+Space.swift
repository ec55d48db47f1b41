import Foundation
import HaulCore
import HaulStore

/// Room on disk: the size limit and the free-space margin, before and during the body, and what
/// an I/O failure says about the bytes kept.
extension BodyWriter {
    /// Refuses, before any body byte, a download whose announced length cannot fit with the margin.
    func checkFreeSpace(_ body: BodyPlan) throws(DownloadError) {
        if let maxSize = request.maxSize, let finalLength = body.finalLength, finalLength > maxSize {
            throw tooLarge(
                "the file is \(Self.size(finalLength)), more than \(setting: .maxSize) \(Self.size(maxSize)); nothing more was downloaded",
                needed: finalLength, limit: maxSize)
        }
        guard let layout = output.layout, let finalLength = body.finalLength,
            let measured = FreeSpace.measure(at: layout.directory)
        else { return }
        let free = measured.available
        // Just measured: the watch during the body starts a stride from here.
        nextSpaceCheck = bodyBytesWritten + Self.freeSpaceStride
        let kept = body.writeOffset + body.overlap
        // Bytes a restart truncates away come back as free space.
        let available = free + max(0, output.sink.prefixLength - kept)
        // Space the partial already holds past what is kept (segments preallocate the whole file,
        // and write past the prefix) is not needed again, unless a restart truncates it.
        let held = kept == output.sink.prefixLength ? max(0, min(output.partialFile?.allocatedBytes ?? 0, finalLength) - kept) : 0
        let margin = measured.margin(request.minFreeSpace)
        let verdict = SpaceCheck.verdict(bytesStillNeeded: finalLength - kept - held, available: available, margin: margin)
        guard case .tooSmall(let needed, let available) = verdict else { return }
        // The margin is named as a setting (a hint) only where lowering it would let the file fit.
        let text: SettingText =
            SpaceCheck.marginIsTheObstacle(bytesStillNeeded: finalLength - kept - held, available: available)
            ? """
            not enough free space in \(layout.directory): the download needs \(Self.size(needed)) \
            (\(Self.size(finalLength - kept - held)) plus the \(Self.size(margin)) margin of \(setting: .minFreeSpace)) \
            and \(Self.size(available)) are available
            """
            : """
            not enough free space in \(layout.directory): the download needs \(Self.size(finalLength - kept - held)) \
            and \(Self.size(available)) are available
            """
        var error = DownloadError(.io, text)
        error.path = layout.directory
        error.space = DownloadError.Space(needed: needed, available: available)
        throw error
    }

    /// The file is larger than `maxSize` allows (`needed`: its size, when announced).
    func tooLarge(_ text: SettingText, needed: Int64?, limit: Int64) -> DownloadError {
        var error = DownloadError(.tooLarge, text)
        error.space = needed.map { DownloadError.Space(needed: $0, available: limit) }
        return error
    }

    static func size(_ bytes: Int64) -> String {
        "\(bytes) bytes (\(String(format: "%.1f", Double(bytes) / 1_048_576)) MiB)"
    }

    /// A failed write or sync as the download's error: what it says about the bytes kept, the
    /// file, its `errno`, and for a full disk the room still needed.
    func ioFailure(_ error: StoreError) -> DownloadError {
        var failure = DownloadError(.io, SettingText(ioMessage(error)))
        failure.systemError = error.code
        failure.path = output.sink.path
        if error.kind == .noSpace, let total = output.record.finalLength, let layout = output.layout {
            let free = FreeSpace.available(at: layout.directory) ?? 0
            failure.space = DownloadError.Space(needed: max(0, total - output.sink.prefixLength), available: free)
        }
        return failure
    }

    private func ioMessage(_ error: StoreError) -> String {
        if output.layout == nil {
            // A direct output (a device, a pipe) is never resumed: promise nothing.
            return "\(error.message); \(output.sink.prefixLength) bytes were written to \(output.sink.path), which cannot be resumed"
        }
        if error.kind == .noSpace, let total = output.record.finalLength {
            let needed = max(0, total - output.sink.prefixLength)
            let kept =
                output.sink.prefixLength > 0
                ? "The \(output.sink.prefixLength) bytes downloaded so far are kept and the next run resumes"
                : "Nothing was downloaded"
            return "\(error.message); \(needed) more bytes are needed. \(kept)"
        }
        return error.message
    }

    /// Keeps `minFreeSpace` free while the body is written, every `freeSpaceStride` bytes: a body
    /// without a length (or a longer one than announced) must not fill the disk. The bytes written
    /// so far are kept and the next run resumes.
    func watchFreeSpace() {
        guard let layout = output.layout, bodyBytesWritten >= nextSpaceCheck else { return }
        nextSpaceCheck = bodyBytesWritten + Self.freeSpaceStride
        guard let measured = FreeSpace.measure(at: layout.directory) else { return }
        let margin = measured.margin(request.minFreeSpace)
        let free = measured.available
        guard free < margin else { return }
        let remaining = output.record.finalLength.map { max(0, $0 - output.sink.prefixLength) }
        let kept = "the \(output.sink.prefixLength) bytes downloaded so far are kept and the next run resumes"
        // The margin is a hint only where lowering it would let the rest fit.
        let text: SettingText =
            SpaceCheck.marginIsTheObstacle(bytesStillNeeded: remaining, available: free)
            ? "stopped with \(Self.size(free)) free in \(layout.directory), less than the \(Self.size(margin)) of \(setting: .minFreeSpace); \(kept)"
            : "stopped with \(Self.size(free)) free in \(layout.directory), less than the \(Self.size(remaining ?? 0)) still to download; \(kept)"
        var error = DownloadError(.io, text)
        error.path = layout.directory
        error.space = DownloadError.Space(needed: (remaining ?? 0) + margin, available: free)
        decided = .failed(error, retryable: false, retryAfter: nil)
    }

    static let freeSpaceStride: Int64 = 4 << 20
}
