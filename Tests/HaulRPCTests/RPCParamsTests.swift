import Foundation
import HaulRPC
import Testing

@Suite("RPC parameters: windows and positions at any Int64")
struct RPCParamsTests {
    let list = Array(0..<5)

    @Test func windowsFollowAria2AndNeverOverflow() {
        #expect(RPCParams.window(list, offset: 1, count: 2) == [1, 2])
        #expect(RPCParams.window(list, offset: -1, count: 2) == [4, 3])
        #expect(RPCParams.window(list, offset: 1, count: .max) == [1, 2, 3, 4])
        #expect(RPCParams.window(list, offset: .max, count: .max) == [])
        #expect(RPCParams.window(list, offset: .min, count: .max) == [])
        #expect(RPCParams.window(list, offset: -1, count: .max) == [4, 3, 2, 1, 0])
        #expect(RPCParams.window(list, offset: -5, count: .max) == [0])
        #expect(RPCParams.window(list, offset: 0, count: .min) == [])
        #expect(RPCParams.window([Int](), offset: 0, count: 3) == [])
    }

    @Test func positionsAreClampedIntoTheList() {
        #expect(RPCParams.movedIndex(current: 2, count: 5, position: 0, from: .set) == 0)
        #expect(RPCParams.movedIndex(current: 2, count: 5, position: 1, from: .current) == 3)
        #expect(RPCParams.movedIndex(current: 2, count: 5, position: -1, from: .end) == 3)
        for origin in [RPCParams.Origin.set, .current, .end] {
            #expect(RPCParams.movedIndex(current: 2, count: 5, position: .max, from: origin) == 4)
            #expect(RPCParams.movedIndex(current: 2, count: 5, position: .min, from: origin) == 0)
            #expect(RPCParams.movedIndex(current: 0, count: 1, position: .max, from: origin) == 0)
        }
    }

    @Test func theEndpointChecksTokensAndAnswersBatches() throws {
        let endpoint = RPCEndpoint(secret: "s", openMethods: ["system.listMethods"], maximumBodyBytes: 1 << 20)
        func handle(_ text: String) -> (JSONValue?, Bool) {
            let (response, authenticated) = endpoint.handle(Data(text.utf8)) { method, params in .success(.array([.string(method)] + params)) }
            return (response.flatMap(JSONValue.parse), authenticated)
        }
        // A valid token reaches the method without it
        let (good, ok) = handle(#"{"jsonrpc":"2.0","id":1,"method":"m","params":["token:s",2]}"#)
        #expect(good?["result"] == ["m", 2] && ok)
        // A wrong one never does
        let (bad, notOK) = handle(#"{"jsonrpc":"2.0","id":1,"method":"m","params":["token:x",2]}"#)
        #expect(bad?["error"]?["message"] == "Unauthorized" && !notOK)
        // Open methods need none; requests without an id get no answer
        #expect(handle(#"{"jsonrpc":"2.0","id":1,"method":"system.listMethods"}"#).0?["result"] == ["system.listMethods"])
        #expect(handle(#"{"jsonrpc":"2.0","method":"m","params":["token:s"]}"#).0 == nil)
        // An id that is neither string, number nor null is an invalid request
        #expect(handle(#"{"jsonrpc":"2.0","id":[[1]],"method":"m","params":["token:s"]}"#).0?["error"]?["code"] == .int(-32600))
        // Batches and multicall answer each element
        let (batch, _) = handle(#"[{"jsonrpc":"2.0","id":1,"method":"m","params":["token:s"]},{"jsonrpc":"2.0","id":2,"method":"m"}]"#)
        #expect(batch?.array?.count == 2)
        let (multi, _) = handle(
            #"{"jsonrpc":"2.0","id":1,"method":"system.multicall","params":[[{"methodName":"m","params":["token:s"]},{"methodName":"m"}]]}"#)
        #expect(multi?["result"]?.array?.count == 2)
        // Too deep: an error answer naming the limit
        let (deep, _) = handle(String(repeating: "[", count: 64))
        #expect(deep?["error"]?["message"]?.string?.contains("nested deeper") == true)
    }

    @Test("GIVEN a request whose id is a whole number above Int64.max WHEN answered THEN the id is echoed exactly, digit for digit")
    func aLargeNumericIdIsEchoedExactly() throws {
        let endpoint = RPCEndpoint(secret: "s", openMethods: ["system.listMethods"], maximumBodyBytes: 1 << 20)
        for id in ["9223372036854775808", "18446744073709551615"] {
            let (response, _) = endpoint.handle(Data(#"{"jsonrpc":"2.0","id":\#(id),"method":"system.listMethods"}"#.utf8)) { method, _ in
                .success(.string(method))
            }
            let text = String(decoding: try #require(response), as: UTF8.self)
            #expect(text.contains(#""id":\#(id),"#), "\(text)")
        }
    }
}
