import CCurl
import Testing

@testable import HaulEngine

@Suite("libcurl options: every refusal is an error that names the option (no network)")
struct CurlOptionTests {
    @Test func aHeaderListThatCannotGrowFailsTheRequestBeforeItIsSent() throws {
        // GIVEN an append that fails (libcurl's returns NULL when it cannot allocate) at the second line
        var calls = 0
        let failing: CurlHeaderList.Append = { list, line in
            calls += 1
            return calls == 2 ? nil : curl_slist_append(list, line)
        }
        // WHEN the list is built THEN it is an error naming CURLOPT_HTTPHEADER, never a shorter list
        let error = #expect(throws: CurlOptionError.self) {
            _ = try CurlHeaderList(["Range: bytes=10-", "If-Range: \"v1\"", "Accept: */*"], append: failing)
        }
        #expect(error?.option == .httpHeader)
        #expect(error?.description.contains("the transfer was not started") == true)
        #expect(calls == 2)
        // AND with libcurl's own append every line is there, in order
        let list = try CurlHeaderList(["A: 1", "B: 2"])
        var lines: [String] = []
        var node = list.raw
        while let current = node {
            lines.append(String(cString: current.pointee.data))
            node = current.pointee.next
        }
        #expect(lines == ["A: 1", "B: 2"])
    }

    @Test func unknownOptionIsAnErrorNamingIt() throws {
        // GIVEN an option id this libcurl does not know (as CURLOPT_PROTOCOLS_STR is to libcurl < 7.85)
        let handle = try #require(CurlEasyHandle())
        let unknown = CurlOption(CURLoption(rawValue: 10_999), "CURLOPT_FROM_THE_FUTURE")

        // WHEN it is set
        let error = #expect(throws: CurlOptionError.self) { try handle.set(unknown, "http,https") }

        // THEN the error carries libcurl's code and a message naming the option
        #expect(error?.code == CURLE_UNKNOWN_OPTION)
        #expect(error?.option == unknown)
        #expect(error?.description.contains("does not support CURLOPT_FROM_THE_FUTURE") == true)
    }

    @Test func refusedValueIsAnErrorNamingTheOption() throws {
        // GIVEN a known option given a value libcurl rejects
        let handle = try #require(CurlEasyHandle())

        // WHEN the protocol restriction names a protocol libcurl does not have, or a string is
        // longer than libcurl accepts (8,000,000 bytes)
        let protocols = #expect(throws: CurlOptionError.self) { try handle.set(.protocols, "http,no-such-protocol") }
        let url = #expect(throws: CurlOptionError.self) { try handle.set(.url, String(repeating: "a", count: 8_000_001)) }

        // THEN each is an error that names its option and libcurl's reason, not a silent no-op
        #expect(protocols?.option == .protocols)
        #expect(protocols?.code != CURLE_OK)
        #expect(protocols?.description.contains("refused CURLOPT_PROTOCOLS_STR") == true)
        #expect(url?.code == CURLE_BAD_FUNCTION_ARGUMENT)
        #expect(url?.description.contains("refused CURLOPT_URL") == true)
    }

    @Test func acceptedOptionsDoNotThrow() throws {
        // GIVEN a fresh handle WHEN the http/https restriction is set as the transport sets it THEN it is accepted
        let handle = try #require(CurlEasyHandle())
        try handle.set(.protocols, "http,https")
        try handle.set(.noSignal, 1)
    }

    @Test func refusalFailsTheTransferLoudly() {
        // GIVEN libcurl refused the protocol restriction
        let error = CurlOptionError(option: .protocols, code: CURLE_UNKNOWN_OPTION)

        // WHEN the transport turns it into the transfer's outcome
        let outcome = CurlTransport.outcome(refused: error)

        // THEN the transfer fails, not retryable, with the option's name in the message
        guard case .failed(let failure) = outcome else {
            Issue.record("expected a failed transfer, got \(outcome)")
            return
        }
        #expect(failure.kind == .optionRefused)
        #expect(!failure.isRetryable)
        #expect(failure.message.contains("CURLOPT_PROTOCOLS_STR"))
    }

    @Test func everyOptionNameIsLibcurlsOwn() {
        // GIVEN the options the transport sets WHEN each id is looked up in libcurl's option table
        // THEN libcurl knows it under the name Haul reports (so an error never names the wrong option)
        for option in CurlOption.all {
            let known = curl_easy_option_by_id(option.id).flatMap { $0.pointee.name }.map { "CURLOPT_" + String(cString: $0) }
            #expect(known == option.name, "\(option.name) is \(known ?? "unknown") in this libcurl")
        }
    }
}
