@testable import Haul

extension DownloadEvent {
    /// The event's case name, for asserting sequences.
    var kindName: String {
        switch self {
        case .started: return "started"
        case .response: return "response"
        case .progress: return "progress"
        case .restarted: return "restarted"
        case .retrying: return "retrying"
        case .mirror: return "mirror"
        case .paused: return "paused"
        case .completed: return "completed"
        case .failed: return "failed"
        case .cancelled: return "cancelled"
        }
    }
}
