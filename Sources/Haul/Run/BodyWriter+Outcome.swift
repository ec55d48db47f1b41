import Foundation
import HaulCore
import HaulEngine

extension BodyWriter {
    // MARK: end

    /// The attempt's outcome once the transport has returned.
    func finalOutcome(_ transfer: TransferOutcome) -> AttemptOutcome {
        if let decided { return decided }
        if reachedSegments { return .bodyFinished }
        switch transfer {
        case .stoppedByHandler:
            return .stopped
        case .failed(let error):
            let category: DownloadError.Category
            switch error.kind {
            case .headerTooLarge, .protocolViolation: category = .protocolViolation
            case .optionRefused: category = .engine
            default: category = .network
            }
            var failure = DownloadError(category, "\(error.text) (\(Redaction.url(url)))")
            failure.engineCode = error.code
            return .failed(failure, retryable: error.isRetryable, retryAfter: nil)
        case .completed:
            guard let body else {
                return .failed(DownloadError(.protocolViolation, "the response ended without a body to write"), retryable: true, retryAfter: nil)
            }
            if cursor?.overlapDone == false { return overlapMismatch() }
            if let finalLength = body.finalLength, output.sink.prefixLength != finalLength {
                return .failed(
                    DownloadError(.network, "the connection ended after \(output.sink.prefixLength) of \(finalLength) bytes"),
                    retryable: true, retryAfter: nil)
            }
            return .bodyFinished
        }
    }

    static func outcome(for failure: VerdictFailure, head: ResponseHead) -> AttemptOutcome {
        switch failure {
        case .httpStatus(let status):
            let retryAfter = head.headers["Retry-After"].flatMap { RetryAfter.delay(fromHeader: $0, now: Date()) }
            return .failed(
                DownloadError(.httpStatus, "the server answered \(status) \(HTTPStatus.reasonPhrase(status))", httpStatus: status),
                retryable: RetryPolicy.isRetryable(status: status),
                retryAfter: retryAfter)
        case .cannotResume(let message):
            return .failed(DownloadError(.cannotResume, message), retryable: false, retryAfter: nil)
        case .protocolViolation(let message):
            return .failed(DownloadError(.protocolViolation, SettingText(message)), retryable: false, retryAfter: nil)
        }
    }
}
