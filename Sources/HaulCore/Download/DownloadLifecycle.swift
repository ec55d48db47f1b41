/// Where a queued download is in its life. Stored as its raw value.
public enum DownloadState: String, Sendable, Codable, CaseIterable {
    /// Waiting for a slot in a run.
    case queued
    /// A process runs its transfer.
    case running
    /// A pause was asked while it ran; its transfer stops at the next checkpoint.
    case pausing
    /// Stopped at a checkpoint; it continues from its bytes on disk when resumed.
    case paused
    /// The file is complete and in place.
    case completed
    /// It ended with an error; its bytes on disk are kept, and a resume puts it back in the queue.
    case failed
    /// A cancel was asked while it ran; its transfer is stopping.
    case cancelling
    /// Cancelled for good.
    case cancelled

    /// No transfer runs and none will without a new request.
    public var isSettled: Bool {
        switch self {
        case .paused, .completed, .failed, .cancelled: return true
        case .queued, .running, .pausing, .cancelling: return false
        }
    }

    /// A transfer is (or may still be) moving bytes.
    public var hasTransfer: Bool {
        self == .running || self == .pausing || self == .cancelling
    }
}

/// What happened to a download, from the user or from its transfer.
package enum LifecycleInput: Sendable, Equatable, CaseIterable {
    /// The scheduler gives it a slot.
    case start
    /// The user asked to pause it.
    case pauseRequested
    /// The user asked to resume it.
    case resumeRequested
    /// The user asked to cancel it.
    case cancelRequested
    /// The transfer stopped at a checkpoint after a pause request.
    case transferPaused
    /// The transfer stopped after a cancel request.
    case transferCancelled
    /// The transfer finished the file.
    case transferCompleted
    /// The transfer ended with an error.
    case transferFailed
    /// A process found this download in a transitional state left by an owner that died.
    case ownerLost
}

/// What the owner must do after a transition.
package enum LifecycleAction: Sendable, Equatable {
    /// Nothing to do.
    case none
    /// Begin a transfer.
    case startTransfer
    /// Ask the running transfer to stop at a checkpoint.
    case stopTransfer
}

/// A transition that the lifecycle does not allow; the state is left unchanged.
package struct IllegalTransition: Error, Sendable, Equatable, CustomStringConvertible {
    /// The state the download was in.
    package let state: DownloadState
    /// What was refused.
    package let input: LifecycleInput

    package var description: String {
        "cannot \(Self.verb(input)) a download that is \(state.rawValue)"
    }

    static func verb(_ input: LifecycleInput) -> String {
        switch input {
        case .start: return "start"
        case .pauseRequested: return "pause"
        case .resumeRequested: return "resume"
        case .cancelRequested: return "cancel"
        case .transferPaused: return "mark paused"
        case .transferCancelled: return "mark cancelled"
        case .transferCompleted: return "complete"
        case .transferFailed: return "fail"
        case .ownerLost: return "recover"
        }
    }
}

/// The legal transitions of a download's life, as a pure function: no I/O, tested alone.
package enum DownloadLifecycle {
    /// The next state and what to do, or `IllegalTransition`.
    package static func apply(_ input: LifecycleInput, to state: DownloadState) -> Result<(DownloadState, LifecycleAction), IllegalTransition> {
        switch (state, input) {
        case (.queued, .start): return .success((.running, .startTransfer))
        case (.queued, .pauseRequested): return .success((.paused, .none))
        case (.queued, .cancelRequested): return .success((.cancelled, .none))

        case (.running, .pauseRequested): return .success((.pausing, .stopTransfer))
        case (.running, .cancelRequested): return .success((.cancelling, .stopTransfer))
        case (.running, .transferCompleted): return .success((.completed, .none))
        case (.running, .transferFailed): return .success((.failed, .none))
        // A transfer that stops by itself while running (the process is shutting down) pauses.
        case (.running, .transferPaused): return .success((.paused, .none))
        case (.running, .ownerLost): return .success((.queued, .none))

        case (.pausing, .transferPaused): return .success((.paused, .none))
        // The transfer finished or failed before the pause took effect.
        case (.pausing, .transferCompleted): return .success((.completed, .none))
        case (.pausing, .transferFailed): return .success((.failed, .none))
        case (.pausing, .cancelRequested): return .success((.cancelling, .stopTransfer))
        case (.pausing, .ownerLost): return .success((.paused, .none))

        case (.paused, .resumeRequested): return .success((.queued, .none))
        case (.paused, .cancelRequested): return .success((.cancelled, .none))
        case (.paused, .pauseRequested): return .success((.paused, .none))

        case (.failed, .resumeRequested): return .success((.queued, .none))
        case (.failed, .cancelRequested): return .success((.cancelled, .none))

        case (.cancelling, .transferCancelled), (.cancelling, .transferPaused), (.cancelling, .transferFailed):
            return .success((.cancelled, .none))
        // Too late to cancel: the file is complete and stays.
        case (.cancelling, .transferCompleted): return .success((.completed, .none))
        case (.cancelling, .ownerLost): return .success((.cancelled, .none))
        case (.cancelling, .cancelRequested): return .success((.cancelling, .none))

        case (.queued, .resumeRequested): return .success((.queued, .none))
        case (.running, .resumeRequested): return .success((.running, .none))
        default:
            return .failure(IllegalTransition(state: state, input: input))
        }
    }
}
