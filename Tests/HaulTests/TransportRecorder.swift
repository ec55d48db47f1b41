import Foundation
import HaulCore
import HaulEngine
import Synchronization

/// A transfer handler that keeps everything a transport hands it, and checks the contract every
/// engine owes a handler: one call at a time, nothing after `perform` returned.
final class TransportRecorder: TransferHandler, @unchecked Sendable {
    private struct State {
        var heads: [ResponseHead] = []
        var body: [UInt8] = []
        var callsAfterReturn = 0
        var overlappingCalls = 0
        /// A second head, a body chunk before the head, or an interim (1xx) head.
        var misplacedHeads = 0
        var inCall = false
    }

    private let state = Mutex(State())
    private let returned = Atomic<Bool>(false)
    /// Stop (`.stop`) once the body has this many bytes; nil to read it all.
    let stopAfterBytes: Int?
    /// Answer `.stop` to the head.
    let stopAtHead: Bool
    /// Answer `true` to the abort poll once this many bytes arrived; nil never.
    let abortAfterBytes: Int?
    /// Microseconds each body chunk takes to "write" (a slow disk).
    let microsecondsPerChunk: UInt32

    init(stopAfterBytes: Int? = nil, stopAtHead: Bool = false, abortAfterBytes: Int? = nil, microsecondsPerChunk: UInt32 = 0) {
        self.stopAfterBytes = stopAfterBytes
        self.stopAtHead = stopAtHead
        self.abortAfterBytes = abortAfterBytes
        self.microsecondsPerChunk = microsecondsPerChunk
    }

    var heads: [ResponseHead] { state.withLock { $0.heads } }
    var head: ResponseHead? { heads.first }
    var body: [UInt8] { state.withLock { $0.body } }
    /// Calls that broke the contract: after `perform` returned (looked for after a short wait, so a
    /// late call from another thread is seen), while another call ran, or a head out of place.
    var contractViolations: Int {
        usleep(100_000)
        return state.withLock { $0.callsAfterReturn + $0.overlappingCalls + $0.misplacedHeads }
    }

    /// Runs `perform` and marks its return, after which any call counts as a violation.
    func perform(_ transport: any HTTPTransport, _ request: TransferRequest, _ options: TransferOptions) -> TransferOutcome {
        let outcome = transport.perform(request, options: options, handler: self)
        returned.store(true, ordering: .sequentiallyConsistent)
        return outcome
    }

    private func enter<T>(_ body: (inout State) -> T) -> T {
        let value = state.withLock { state -> T in
            if returned.load(ordering: .sequentiallyConsistent) { state.callsAfterReturn += 1 }
            if state.inCall { state.overlappingCalls += 1 }
            state.inCall = true
            return body(&state)
        }
        // A short pause inside the call makes an overlapping call from another thread visible.
        usleep(50)
        state.withLock { $0.inCall = false }
        return value
    }

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        enter { state in
            if !state.heads.isEmpty || !state.body.isEmpty || (100..<200).contains(head.status) { state.misplacedHeads += 1 }
            state.heads.append(head)
            return stopAtHead ? .stop : .proceed
        }
    }

    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        if microsecondsPerChunk > 0 { usleep(microsecondsPerChunk) }
        return enter { state in
            if state.heads.isEmpty { state.misplacedHeads += 1 }
            state.body.append(contentsOf: chunk)
            if let stopAfterBytes, state.body.count >= stopAfterBytes { return .stop }
            return .proceed
        }
    }

    func transferShouldAbort() -> Bool {
        enter { state in
            guard let abortAfterBytes else { return false }
            return state.body.count >= abortAfterBytes
        }
    }
}

extension TransferOutcome {
    /// The failure's kind, or nil for an outcome that is not a failure.
    var failureKind: TransportError.Kind? {
        if case .failed(let error) = self { return error.kind }
        return nil
    }
}
