import Foundation
import HaulCore
import HaulEngine

/// A response handler that stops at a redirect and hands its head back.
protocol RedirectStopping: TransferHandler {
    /// The redirect's head, when the response was one.
    var redirectHead: ResponseHead? { get }
}

/// The one redirect follower of a download: an attempt's request and a mirror's probe alike go
/// from hop to hop by the download's `RedirectPolicy` (credentials never carried to another
/// origin, no loops, the hop limit), each hop answered by a handler of its own.
enum RedirectFollower {
    /// How the chain ended.
    enum Ending<Handler> {
        /// The final hop answered (or its transfer failed): its outcome, its handler and the request it answered.
        case answered(TransferOutcome, Handler, TransferRequest)
        /// A redirect the policy does not follow.
        case refused(RedirectError)
        /// `goesOn` said to stop before a hop.
        case stopped
    }

    /// Sends `first` on `transport` and follows its redirects; `handler` makes the handler of each
    /// hop (`handlerMayBlock`: its handlers may wait, e.g. for a speed limit, so the transport
    /// gives them a thread of their own).
    static func follow<Handler: RedirectStopping>(
        _ first: TransferRequest, policy: RedirectPolicy, transport: any HTTPTransport, options: TransferOptions, handlerMayBlock: Bool,
        goesOn: () -> Bool = { true }, handler: (TransferRequest) -> Handler
    ) async -> Ending<Handler> {
        var request = first
        let originalOrigin = request.origin
        var visited = [request.url]
        while goesOn() {
            let hop = handler(request)
            let outcome = await transport.transfer(request, options: options, handler: hop, handlerMayBlock: handlerMayBlock)
            guard let redirect = hop.redirectHead else { return .answered(outcome, hop, request) }
            do throws(RedirectError) {
                request = try policy.nextRequest(after: request, head: redirect, originalOrigin: originalOrigin, visited: visited)
            } catch {
                return .refused(error)
            }
            visited.append(request.url)
        }
        return .stopped
    }
}
