import Testing
@testable import HaulCore

@Suite("DownloadLifecycle: legal and illegal transitions, no I/O")
struct DownloadLifecycleTests {
    func next(_ state: DownloadState, _ input: LifecycleInput) -> (DownloadState, LifecycleAction)? {
        try? DownloadLifecycle.apply(input, to: state).get()
    }

    @Test func happyPath() {
        // GIVEN a queued download WHEN started and completed THEN it runs, then completes
        #expect(next(.queued, .start)! == (.running, .startTransfer))
        #expect(next(.running, .transferCompleted)! == (.completed, .none))
    }

    @Test func pauseGoesThroughPausing() {
        #expect(next(.running, .pauseRequested)! == (.pausing, .stopTransfer))
        #expect(next(.pausing, .transferPaused)! == (.paused, .none))
        #expect(next(.paused, .resumeRequested)! == (.queued, .none))
    }

    @Test func queuedDownloadsPauseAndCancelAtOnce() {
        #expect(next(.queued, .pauseRequested)! == (.paused, .none))
        #expect(next(.queued, .cancelRequested)! == (.cancelled, .none))
    }

    @Test func cancelGoesThroughCancelling() {
        #expect(next(.running, .cancelRequested)! == (.cancelling, .stopTransfer))
        #expect(next(.cancelling, .transferCancelled)! == (.cancelled, .none))
        #expect(next(.pausing, .cancelRequested)! == (.cancelling, .stopTransfer))
    }

    @Test func raceBetweenPauseAndCompletionKeepsTheFile() {
        #expect(next(.pausing, .transferCompleted)! == (.completed, .none))
        #expect(next(.cancelling, .transferCompleted)! == (.completed, .none))
    }

    @Test func failedDownloadsCanBeRetried() {
        #expect(next(.running, .transferFailed)! == (.failed, .none))
        #expect(next(.failed, .resumeRequested)! == (.queued, .none))
    }

    @Test func deadOwnerRecovery() {
        // GIVEN states left behind by a process killed with -9 WHEN recovered THEN each lands where it meant to go
        #expect(next(.running, .ownerLost)!.0 == .queued)
        #expect(next(.pausing, .ownerLost)!.0 == .paused)
        #expect(next(.cancelling, .ownerLost)!.0 == .cancelled)
    }

    @Test func illegalTransitionsAreRefused() {
        let illegal: [(DownloadState, LifecycleInput)] = [
            (.completed, .start), (.completed, .resumeRequested), (.completed, .cancelRequested),
            (.cancelled, .resumeRequested), (.cancelled, .start), (.paused, .start),
            (.queued, .transferCompleted), (.paused, .transferCompleted), (.failed, .start),
            (.running, .start), (.queued, .ownerLost), (.completed, .pauseRequested),
        ]
        for (state, input) in illegal {
            let result = DownloadLifecycle.apply(input, to: state)
            #expect(throws: IllegalTransition.self) { try result.get() }
        }
    }

    @Test func everyStateAnswersEveryInputWithoutCrashing() {
        let inputs: [LifecycleInput] = [.start, .pauseRequested, .resumeRequested, .cancelRequested, .transferPaused, .transferCancelled, .transferCompleted, .transferFailed, .ownerLost]
        var legal = 0
        for state in DownloadState.allCases {
            for input in inputs {
                if case .success = DownloadLifecycle.apply(input, to: state) { legal += 1 }
            }
        }
        #expect(legal == 27)
    }

    @Test func messageNamesTheStateAndTheVerb() {
        let error = IllegalTransition(state: .completed, input: .resumeRequested)
        #expect(error.description == "cannot resume a download that is completed")
    }
}
