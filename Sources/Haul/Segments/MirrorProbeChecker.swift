import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// The response to a mirror's probe (`MirrorProbe`): judged by the download's verdict, then its
/// body compared, byte for byte, with what the primary delivered there. Nothing is ever written.
final class MirrorProbeChecker: RedirectStopping {
    private let file: PartialFile
    private let plan: RequestPlan
    private let shouldAbort: @Sendable () -> Bool
    /// A redirect to follow; the coordinator makes the next request.
    private(set) var redirectHead: ResponseHead?
    private var verdict: MirrorProbe.Verdict?
    /// Body bytes compared so far (all equal).
    private var compared: Int64 = 0
    private var mismatch: Int64?
    private var overflow = false
    private var readFailure: StoreError?

    private let wholeFile: Checksum?

    init(file: PartialFile, plan: RequestPlan, wholeFile: Checksum?, shouldAbort: @escaping @Sendable () -> Bool) {
        self.file = file
        self.plan = plan
        self.wholeFile = wholeFile
        self.shouldAbort = shouldAbort
    }

    /// What the probe proved.
    enum Result: Equatable {
        case admitted(Validators)
        case dropped(String)
        /// The download is stopping: no verdict on the mirror.
        case stopped
        /// The bytes on disk could not be read.
        case readFailed(StoreError)
    }

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        if head.isRedirect {
            redirectHead = head
            return .stop
        }
        let verdict = MirrorProbe.evaluate(head, for: plan, wholeFile: wholeFile)
        self.verdict = verdict
        if case .compare = verdict { return .proceed }
        return .stop
    }

    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        // A stopping download may be closing or truncating the file it would read.
        guard let first = plan.requestedFirst, !shouldAbort() else { return .stop }
        let wanted = Int(min(Int64(chunk.count), plan.overlap - compared))
        guard wanted == chunk.count else {
            overflow = true
            return .stop
        }
        let offset = first + compared
        do throws(StoreError) {
            switch try file.compare(chunk, at: offset) {
            case .matches:
                compared += Int64(wanted)
                return .proceed
            case .differs(let at):
                mismatch = at
            case .fileEnds:
                readFailure = StoreError(.io, "the partial file ends before byte \(offset + Int64(wanted))")
            }
        } catch {
            readFailure = error
        }
        return .stop
    }

    func transferShouldAbort() -> Bool {
        shouldAbort()
    }

    /// The probe's result once the transfer ended with `outcome`.
    func result(_ outcome: TransferOutcome) -> Result {
        if let readFailure { return .readFailed(readFailure) }
        if let mismatch { return .dropped(MirrorProbe.bytesDiffer(at: mismatch)) }
        if overflow { return .dropped("it sent more than the \(plan.overlap) bytes asked for") }
        switch verdict {
        case .drop(let reason):
            return .dropped(reason)
        case .compare(let validators):
            if compared == plan.overlap { return .admitted(validators) }
            if shouldAbort() { return .stopped }
            if case .failed(let error) = outcome { return .dropped("its connection failed (\(error.message))") }
            return .dropped("it sent \(compared) of the \(plan.overlap) bytes asked for")
        case nil:
            if shouldAbort() { return .stopped }
            if case .failed(let error) = outcome { return .dropped("it cannot be reached (\(error.message))") }
            return .dropped("it sent no answer")
        }
    }
}
