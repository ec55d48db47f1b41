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

    /// Every legal transition: (state, input) -> (next state, action). Any pair not listed is illegal.
    static let transitionTable: [(DownloadState, LifecycleInput, DownloadState, LifecycleAction)] = [
        (.queued, .start, .running, .startTransfer),
        (.queued, .pauseRequested, .paused, .none),
        (.queued, .cancelRequested, .cancelled, .none),
        (.queued, .resumeRequested, .queued, .none),

        (.running, .pauseRequested, .pausing, .stopTransfer),
        (.running, .cancelRequested, .cancelling, .stopTransfer),
        (.running, .transferCompleted, .completed, .none),
        (.running, .transferFailed, .failed, .none),
        (.running, .transferPaused, .paused, .none),
        (.running, .ownerLost, .queued, .none),
        (.running, .resumeRequested, .running, .none),

        (.pausing, .transferPaused, .paused, .none),
        (.pausing, .transferCompleted, .completed, .none),
        (.pausing, .transferFailed, .failed, .none),
        (.pausing, .cancelRequested, .cancelling, .stopTransfer),
        (.pausing, .ownerLost, .paused, .none),

        (.paused, .resumeRequested, .queued, .none),
        (.paused, .cancelRequested, .cancelled, .none),
        (.paused, .pauseRequested, .paused, .none),

        (.failed, .resumeRequested, .queued, .none),
        (.failed, .cancelRequested, .cancelled, .none),

        (.cancelling, .transferCancelled, .cancelled, .none),
        (.cancelling, .transferPaused, .cancelled, .none),
        (.cancelling, .transferFailed, .cancelled, .none),
        (.cancelling, .transferCompleted, .completed, .none),
        (.cancelling, .ownerLost, .cancelled, .none),
        (.cancelling, .cancelRequested, .cancelling, .none),
    ]

    @Test func everyStateAndInputFollowsTheTransitionTable() {
        // GIVEN every state and every input
        for state in DownloadState.allCases {
            for input in LifecycleInput.allCases {
                // WHEN the input is applied
                let result = DownloadLifecycle.apply(input, to: state)
                // THEN a listed pair goes exactly where the table says; any other pair is refused,
                // naming that state and input
                let expected = Self.transitionTable.first { $0.0 == state && $0.1 == input }
                switch (result, expected) {
                case (.success(let actual), let expected?):
                    #expect(actual == (expected.2, expected.3), "\(state) + \(input)")
                case (.success(let actual), nil):
                    Issue.record("\(state) + \(input) should be illegal, went to \(actual)")
                case (.failure(let error), let expected?):
                    Issue.record("\(state) + \(input) should go to \(expected.2), was refused: \(error)")
                case (.failure(let error), nil):
                    #expect(error == IllegalTransition(state: state, input: input))
                }
            }
        }
    }

    @Test func transitionTableListsEachPairOnce() {
        // GIVEN the table WHEN its (state, input) pairs are collected THEN none is listed twice
        let pairs = Self.transitionTable.map { "\($0.0) + \($0.1)" }
        #expect(Set(pairs).count == pairs.count)
    }

    @Test func messageNamesTheStateAndTheVerb() {
        let error = IllegalTransition(state: .completed, input: .resumeRequested)
        #expect(error.description == "cannot resume a download that is completed")
    }
}
