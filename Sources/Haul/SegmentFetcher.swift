import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// One response for one segment, judged by `SegmentVerdict` (the download's own verdict).
final class SegmentFetcher: TransferHandler {
    private let coordinator: SegmentCoordinator
    private let index: Int
    private let plan: RequestPlan
    private(set) var verdict: SegmentVerdict?
    private(set) var wroteBytes = 0

    init(coordinator: SegmentCoordinator, index: Int, plan: RequestPlan) {
        self.coordinator = coordinator
        self.index = index
        self.plan = plan
    }

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        let verdict = SegmentVerdict.evaluate(head, for: plan)
        self.verdict = verdict
        return verdict == .write ? .proceed : .stop
    }

    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        let (written, done) = coordinator.write(chunk, into: index)
        wroteBytes += written
        return done ? .stop : .proceed
    }

    func transferShouldAbort() -> Bool {
        coordinator.abandons(index)
    }
}
