import CPostgres
import Foundation

/// The rows of one statement, read into values at once (the libpq result is freed here), as the
/// queue's `Row`s: a column's PostgreSQL type says which `StoreValue` it becomes, so one
/// decoder (`StoredDownload(row:)`) reads the rows of both stores.
struct PGResult {
    let rows: [Row]
    /// Rows changed by an INSERT, UPDATE or DELETE.
    let affected: Int

    init(_ result: OpaquePointer) {
        defer { PQclear(result) }
        let count = Int(PQntuples(result))
        let fields = Int(PQnfields(result))
        let names = (0..<fields).map { String(cString: PQfname(result, Int32($0))) }
        let types = (0..<fields).map { PQftype(result, Int32($0)) }
        var rows: [Row] = []
        rows.reserveCapacity(count)
        for row in 0..<count {
            let values = (0..<fields).map { field -> StoreValue in
                let r = Int32(row)
                let f = Int32(field)
                if PQgetisnull(result, r, f) == 1 { return .null }
                let text = String(cString: PQgetvalue(result, r, f))
                return Self.value(text, type: types[field])
            }
            rows.append(Row(columnNames: names, values: values))
        }
        self.rows = rows
        affected = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// PostgreSQL's built-in type OIDs (pg_type.dat): integers, floats, bytea.
    private static func value(_ text: String, type: Oid) -> StoreValue {
        switch type {
        case 20, 21, 23:
            return Int64(text).map(StoreValue.integer) ?? .text(text)
        case 700, 701, 1700:
            return Double(text).map(StoreValue.real) ?? .text(text)
        case 16:
            return .integer(text == "t" ? 1 : 0)
        case 17:
            return PGBytes.decode(text).map(StoreValue.blob) ?? .text(text)
        default:
            return .text(text)
        }
    }
}

/// `bytea` in PostgreSQL's hex text format (`\x0a1b...`), as parameters are sent and results read.
enum PGBytes {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]("\\x".utf8)
        out.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
