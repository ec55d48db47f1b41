import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// One response for one segment, judged by `SegmentVerdict` (the download's own verdict), from
/// the primary or a mirror alike.
final class SegmentFetcher: TransferHandler {
    private let coordinator: SegmentCoordinator
    private let index: Int
    /// The source asked (index into the coordinator's sources).
    private let source: Int
    private let role: SegmentSource
    private let plan: RequestPlan
    private(set) var verdict: SegmentVerdict?
    private(set) var status: Int?
    private(set) var wroteBytes = 0
    /// When the response's head arrived (for the next piece's size).
    private(set) var headArrived: ContinuousClock.Instant?

    init(coordinator: SegmentCoordinator, index: Int, source: Int, role: SegmentSource, plan: RequestPlan) {
        self.coordinator = coordinator
        self.index = index
        self.source = source
        self.role = role
        self.plan = plan
    }

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        headArrived = .now
        let verdict = SegmentVerdict.evaluate(head, for: plan, from: role)
        self.verdict = verdict
        status = head.status
        return verdict == .write ? .proceed : .stop
    }

    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        let (written, done) = coordinator.write(chunk, into: index)
        wroteBytes += written
        return done ? .stop : .proceed
    }

    func transferShouldAbort() -> Bool {
        coordinator.abandons(index, from: source)
    }
}
