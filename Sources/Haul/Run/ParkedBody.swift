import HaulStore

/// What one response's body waits for before more of it reaches the file: a record save (and the
/// segments' start) running on the blocking pool, and the body bytes that came meanwhile, after
/// the overlap they proved. Owned by its `BodyWriter`, on the transfer's thread; the transfer is
/// parked while a step is pending (`TransferHandler.secondsBeforeNextChunk`).
final class ParkedBody {
    /// What a look at the step found.
    enum Look {
        /// Nothing pending: the body goes on.
        case clear
        /// Still running: the body waits.
        case pending
        /// It ended: what waited for it (`stash`, to write now), or its failure.
        case ended(stash: [UInt8], failure: StoreError?)
    }

    private var pending: RecordSave?
    private var stash: [UInt8] = []

    /// Whether a step is under way (body bytes then wait in the stash).
    var isPending: Bool { pending != nil }

    /// Runs `job` on the blocking pool; the transports' loops are woken when it ends.
    func start(_ job: @escaping @Sendable () throws(StoreError) -> Void) {
        pending = RecordSave(on: BlockingWork.submit, whenDone: { TransferPacing.paceChanged() }, job)
    }

    /// Keeps body bytes that came while the step runs.
    func keep(_ bytes: UnsafeRawBufferPointer) {
        stash.append(contentsOf: bytes)
    }

    /// How the step stands; `waiting`: blocks this thread until it ended (a transport thread of
    /// the transfer's own; the event loop never waits). An ended step is forgotten.
    func look(waiting: Bool) -> Look {
        guard let step = pending else { return .clear }
        if !step.isDone {
            guard waiting else { return .pending }
            _ = step.wait()
        }
        pending = nil
        defer { stash = [] }
        return .ended(stash: stash, failure: step.failure)
    }

    /// After the transfer ended: waits (without a thread) for a step still pending.
    func settle() async {
        guard let step = pending else { return }
        _ = await step.done()
    }
}
