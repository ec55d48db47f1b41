import Foundation
import HaulCore
import HaulEngine
import HaulStore

extension SegmentCoordinator {
    // MARK: mirrors: probed before use, dropped when they disagree

    /// Probes mirror `source` (`MirrorProbe`): waits until the primary has delivered a window of
    /// bytes, asks the mirror for exactly that window (following its redirects by the download's
    /// rules, credentials never carried to another origin), and compares. Returns the validators
    /// its segments are held to when it is admitted; nil when it was dropped or the download stops.
    func probe(_ source: Int) async -> Validators? {
        if let refusal = MirrorProbe.refusal(wholeFile: setup.wholeFileDigest, allowsUnverified: setup.allowsUnverifiedMirrors) {
            dropMirror(source, reason: refusal)
            return nil
        }
        await mainProgress.waitAsync { [self] in
            state.withLock { MirrorProbe.window(mainNext: $0.mainNext, mainEnd: $0.mainEnd) } != nil || shouldStop
        }
        guard let window = state.withLock({ MirrorProbe.window(mainNext: $0.mainNext, mainEnd: $0.mainEnd) }), !shouldStop else { return nil }
        let plan = MirrorProbe.plan(window: window, total: setup.total)
        let first = state.withLock { $0.requests[source] }.asking(for: plan)
        let checker = { [self] (_: TransferRequest) in
            MirrorProbeChecker(file: file, plan: plan, wholeFile: setup.wholeFileDigest) { [self] in shouldStop }
        }
        let followed = await RedirectFollower.follow(
            first, policy: setup.redirects, transport: transport, options: setup.transfer, handlerMayBlock: false, goesOn: { !shouldStop },
            handler: checker)
        switch followed {
        case .stopped:
            return nil
        case .refused(let error):
            dropMirror(source, reason: "its redirect was not followed: \(error.message)")
            return nil
        case .answered(let outcome, let checker, let request):
            switch checker.result(outcome) {
            case .admitted(let validators):
                state.withLock { state in
                    state.sources.admit(source, validators: validators)
                    // Its segments go straight to where its redirects led.
                    state.requests[source] = request
                }
                changes.notify()
                tell(
                    MirrorNote(
                        url: mirrorURL(source), change: .admitted,
                        reason: "same length, and bytes \(window.lowerBound)-\(window.upperBound - 1) match the primary's"))
                return validators
            case .dropped(let reason):
                dropMirror(source, reason: reason)
                return nil
            case .readFailed(let error):
                stop(failing: error)
                return nil
            case .stopped:
                return nil
            }
        }
    }

    /// Waits for another connection's probe of `source`: its validators once admitted; nil when
    /// it was dropped, the probe was abandoned, or the download stops.
    func awaitProbe(_ source: Int) async -> Validators? {
        await changes.waitAsync { [self] in
            if case .probing = state.withLock({ $0.sources.standing(of: source) }) { return shouldStop }
            return true
        }
        guard !shouldStop, case .admitted(let validators) = state.withLock({ $0.sources.standing(of: source) }) else { return nil }
        return validators
    }

    /// Drops a mirror for the rest of the run and says so, once. Its connections abandon their
    /// transfers at the next poll; their segments go back to be claimed by the other sources.
    func dropMirror(_ source: Int, reason: String) {
        let first = state.withLock { $0.sources.drop(source, reason: reason) }
        changes.notify()
        if first { noteDropped(source, reason: reason) }
    }

    /// A mirror's transfer failed; the last of `SegmentSources.failuresBeforeDrop` in a row drops it.
    func mirrorFailed(_ source: Int, reason: String) {
        let dropped = state.withLock { $0.sources.failed(source, reason: reason) }
        if dropped { noteDropped(source, reason: reason) }
    }

    /// The one `.dropped` note of a mirror, whichever rule dropped it.
    private func noteDropped(_ source: Int, reason: String) {
        tell(MirrorNote(url: mirrorURL(source), change: .dropped, reason: reason + "; its ranges go to the other sources"))
    }

    /// Passes a note on while the connections run: once `stopAndWait` returned (the download may
    /// have said its last word), a connection still winding down says nothing more.
    private func tell(_ note: MirrorNote) {
        guard beginInFlight() else { return }
        onMirror(note)
        endInFlight()
    }

    /// The mirror's URL as given (a message shows it through `Redaction`).
    func mirrorURL(_ source: Int) -> URL {
        setup.mirrors[source - 1].url
    }
}
