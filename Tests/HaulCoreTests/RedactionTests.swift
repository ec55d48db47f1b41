import Testing

@testable import HaulCore

@Suite("Redaction: passwords out of every text")
struct RedactionTests {
    @Test func passwordsAreFoundAsWrittenEvenWhereFoundationReadsNoURL() {
        #expect(Redaction.url("http://alice:pw@host:3128/x") == "http://alice:***@host:3128/x")
        // An unencoded '@' in the password, an unusual scheme: cut out as written
        #expect(Redaction.url("http://alice:S3cr@t@host:3128") == "http://alice:***@host:3128")
        #expect(Redaction.withoutPassword("http://alice:S3cr@t@host:3128") == "http://alice@host:3128")
        #expect(Redaction.url("ftp://alice:PASS@host") == "ftp://alice:***@host")
        #expect(Set(Redaction.secrets(inURL: "http://u:p%40ss@h/")) == ["p%40ss", "p@ss"])
        #expect(Redaction.secrets(inURL: "http://user@h/").isEmpty)
        #expect(Redaction.secrets(inURL: "not a url").isEmpty)
    }

    @Test func messagesFromElsewhereLoseEverySecret() {
        let message = "Unsupported proxy syntax in 'http://alice:S3cr@tPw@127.0.0.1:9'"
        #expect(Redaction.text(message, hiding: ["S3cr@tPw"]) == "Unsupported proxy syntax in 'http://alice:***@127.0.0.1:9'")
        // Header credentials: the value and its token
        #expect(Redaction.secrets(inHeaderValue: "Bearer abc.def") == ["Bearer abc.def", "abc.def"])
        #expect(Redaction.text("sent Bearer abc.def", hiding: Redaction.secrets(inHeaderValue: "Bearer abc.def")) == "sent ***")
        // A short secret is hidden only where it stands as a password
        #expect(Redaction.text("proxy http://a:x@h refused: x", hiding: ["x"]) == "proxy http://a:***@h refused: x")
    }
}
