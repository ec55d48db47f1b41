import Foundation
import HaulTestSupport
import Testing

@testable import HaulStore

/// How each queue database takes the values of the statements both run (`QueueDialect`): `$n`
/// parameters and lists, bound by each database's own rules in one place.
@Suite("Store values: one statement text, two databases' parameters")
struct StoreValueBindingTests {
    static let awkward = ["plain", "a\"quote", "back\\slash", "NULL", "comma,brace{}", "", "späce ü"]

    @Test("GIVEN a list of texts with quotes, backslashes, NULL, commas and braces WHEN sent to PostgreSQL THEN each element is quoted and escaped once")
    func postgresArrayLiteral() {
        #expect(
            PGParameter.text(.texts(Self.awkward))
                == #"{"plain","a\"quote","back\\slash","NULL","comma,brace{}","","späce ü"}"#)
        #expect(PGParameter.text(.integers([3, -1, 9_007_199_254_740_993])) == "{3,-1,9007199254740993}")
        #expect(PGParameter.text(.integers([])) == "{}")
        #expect(PGParameter.text(.null) == nil)
        #expect(PGParameter.text(.blob([0, 0xAB])) == "\\x00ab")
    }

    @Test("GIVEN lists WHEN bound to an SQLite statement written with $n THEN json_each reads them back whole, and $n takes the n-th value in any order")
    func sqliteListsAndNumberedParameters() throws {
        let directory = try TemporaryDirectory(prefix: "haul-binding")
        let db = try SQLiteConnection(path: directory.file("store.sqlite"))
        let texts = try db.rows("SELECT value FROM json_each($1) ORDER BY key", [.texts(Self.awkward)]).compactMap { $0.string("value") }
        #expect(texts == Self.awkward)
        let integers = try db.rows("SELECT value FROM json_each($1) ORDER BY key", [.integers([3, -1, Int64.max])]).compactMap { $0.int64("value") }
        #expect(integers == [3, -1, Int64.max])
        // Out of order, repeated, and a value the statement does not use.
        let row = try db.row("SELECT $2 AS b, $1 AS a, $2 || $1 AS ba", [.text("x"), .text("y"), .text("unused")])
        #expect(row?.string("a") == "x" && row?.string("b") == "y" && row?.string("ba") == "yx")
        // A parameter beyond the values given is refused, not bound as NULL.
        #expect(throws: SQLiteError.self) { try db.rows("SELECT $1, $3", [.text("x")]) }
    }
}
