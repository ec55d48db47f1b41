import Foundation
import HaulRPC
import Testing

/// What one message may make the endpoint run and answer, decided without a network.
@Suite("RPC endpoint: calls and answers per message")
struct RPCEndpointLimitsTests {
    let endpoint = RPCEndpoint(secret: "s", openMethods: ["system.listMethods"], maximumBodyBytes: 1 << 20, maximumCalls: 10, maximumAnswerBytes: 4096)

    static func call(_ id: Int, _ method: String = "system.listMethods") -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":["token:s"]}"#
    }

    /// A dispatcher that counts its calls and answers each with `size` bytes of text.
    final class Counting {
        var calls = 0
        let size: Int
        init(size: Int) { self.size = size }
        func dispatch(_ method: String, _ params: [JSONValue]) -> Result<JSONValue, RPCError> {
            calls += 1
            return .success(.string(String(repeating: "x", count: size)))
        }
    }

    func answers(_ body: String, _ counting: Counting) -> [JSONValue] {
        let (response, _) = endpoint.handle(Data(body.utf8)) { counting.dispatch($0, $1) }
        guard let response, let value = JSONValue.parse(response) else { return [] }
        return value.array ?? [value]
    }

    @Test func aBatchOverTheCallLimitRunsNothingAndGetsOneError() {
        let counting = Counting(size: 1)
        // GIVEN a batch of 11 calls where 10 are allowed
        let body = "[" + (0..<11).map { Self.call($0) }.joined(separator: ",") + "]"
        // WHEN it is handled
        let replies = answers(body, counting)
        // THEN nothing ran, and one error says why
        #expect(counting.calls == 0)
        #expect(replies.count == 1)
        #expect(replies.first?["error"]?["message"]?.string?.contains("11 calls in one message, over the 10 allowed") == true, "\(replies)")
        // AND 10 are run
        let within = "[" + (0..<10).map { Self.call($0) }.joined(separator: ",") + "]"
        #expect(answers(within, counting).count == 10)
        #expect(counting.calls == 10)
    }

    @Test func multicallEntriesCountAgainstTheSameLimit() {
        let counting = Counting(size: 1)
        let entries = (0..<8).map { _ in #"{"methodName":"system.listMethods","params":["token:s"]}"# }.joined(separator: ",")
        let multicall = #"{"jsonrpc":"2.0","id":99,"method":"system.multicall","params":[[\#(entries)]]}"#
        // GIVEN a multicall of 8 beside 3 plain calls: 11 in all
        let body = "[" + multicall + "," + (0..<3).map { Self.call($0) }.joined(separator: ",") + "]"
        #expect(answers(body, counting).count == 1)
        #expect(counting.calls == 0)
        // AND beside 2: 10, run
        let fits = "[" + multicall + "," + (0..<2).map { Self.call($0) }.joined(separator: ",") + "]"
        #expect(answers(fits, counting).count == 3)
        #expect(counting.calls == 10)
    }

    @Test func answersPastTheBudgetAreErrorsAndTheCallsAfterThemDoNotRun() {
        // GIVEN calls whose answers take about 950 bytes each, in a budget of 4,096
        let counting = Counting(size: 900)
        let body = "[" + (0..<8).map { Self.call($0) }.joined(separator: ",") + "]"
        // WHEN they are handled
        let replies = answers(body, counting)
        // THEN each call still gets a reply with its id
        #expect(replies.map { $0["id"]?.integer } == (0..<8).map { Int64($0) })
        // AND the first four fit and carry their results
        #expect(replies.prefix(4).allSatisfy { $0["result"] != nil }, "\(replies.prefix(5))")
        // AND the fifth, which would pass the budget, is an error, and the rest were not run
        #expect(replies[4]["error"]?["message"]?.string?.contains("would pass the 4096 bytes") == true, "\(replies[4])")
        #expect(replies[5...].allSatisfy { $0["error"]?["message"]?.string?.hasPrefix("not run:") == true })
        #expect(counting.calls == 5)
        // AND the whole answer stays near the budget
        let (response, _) = endpoint.handle(Data(body.utf8)) { counting.dispatch($0, $1) }
        #expect((response?.count ?? 0) < 4096 + 2048)
    }

    @Test func aSingleAnswerOverTheBudgetIsReplacedByAnError() {
        let counting = Counting(size: 10_000)
        let replies = answers(Self.call(7), counting)
        #expect(replies.count == 1)
        #expect(replies.first?["id"]?.integer == 7)
        #expect(replies.first?["error"]?["message"]?.string?.contains("ask for less") == true, "\(replies)")
    }

    @Test func aMulticallsResultsAreJudgedOneByOne() {
        let counting = Counting(size: 900)
        let entries = (0..<8).map { _ in #"{"methodName":"system.listMethods","params":["token:s"]}"# }.joined(separator: ",")
        let replies = answers(#"{"jsonrpc":"2.0","id":1,"method":"system.multicall","params":[[\#(entries)]]}"#, counting)
        let results = replies.first?["result"]?.array ?? []
        #expect(results.count == 8)
        #expect(results.prefix(4).allSatisfy { $0.array?.count == 1 }, "\(results.prefix(5))")
        #expect(results[4...].allSatisfy { $0["message"] != nil })
        #expect(counting.calls == 5)
    }

    @Test func callsPastTheMessagesTimeAreNotRun() {
        // GIVEN calls of 40 ms each, in a message that may take 100 ms
        let slow = RPCEndpoint(secret: nil, openMethods: [], maximumBodyBytes: 1 << 20, maximumMessageSeconds: 0.1)
        let counting = Counting(size: 1)
        let body = "[" + (0..<10).map { Self.call($0) }.joined(separator: ",") + "]"
        let (response, _) = slow.handle(Data(body.utf8)) { method, params in
            usleep(40_000)
            return counting.dispatch(method, params)
        }
        let replies = response.flatMap(JSONValue.parse)?.array ?? []
        // THEN those started within the time ran, and the rest say they were not run
        #expect(replies.count == 10)
        #expect((3...4).contains(counting.calls), "\(counting.calls) ran")
        #expect(replies[counting.calls...].allSatisfy { $0["error"]?["message"]?.string?.contains("took more than the 0.1 s") == true })
    }

    @Test func aMessageOfTooManyValuesIsRefusedWhileParsing() {
        let counting = Counting(size: 1)
        // GIVEN one call whose params hold more values than 10 calls may (32 each)
        let many = Array(repeating: "1", count: 400).joined(separator: ",")
        let body = #"{"jsonrpc":"2.0","id":1,"method":"system.listMethods","params":[\#(many)]}"#
        let replies = answers(body, counting)
        #expect(counting.calls == 0)
        #expect(replies.first?["error"]?["message"]?.string?.contains("more than 320 JSON values") == true, "\(replies)")
    }
}
