import CSQLite

/// A failure reported by SQLite, with the statement that caused it.
///
/// `resultCode` is the primary result code (`SQLITE_BUSY`, `SQLITE_CORRUPT`, ...), `extendedResultCode`
/// the detailed one (`SQLITE_CONSTRAINT_PRIMARYKEY`, `SQLITE_IOERR_FSYNC`, ...), and `message` the text of
/// `sqlite3_errmsg` at the time of the failure.
package struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The primary result code (the low 8 bits of `extendedResultCode`).
    package let resultCode: Int32
    /// The extended result code, which refines `resultCode`.
    package let extendedResultCode: Int32
    /// SQLite's explanation (from `sqlite3_errmsg`), or Haul's for failures Haul detects itself.
    package let message: String
    /// The SQL that failed, when the failure came from a statement.
    package let sql: String?

    /// Creates an error from raw codes; `resultCode` is derived from `extendedResultCode`.
    package init(extendedResultCode: Int32, message: String, sql: String? = nil) {
        self.resultCode = extendedResultCode & 0xFF
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
    }

    /// The last error recorded on `handle`, read right after a call returned `code`.
    ///
    /// `code` is used when it is more specific than what the handle reports (e.g. `sqlite3_open_v2`
    /// failing before a handle exists).
    static func fromHandle(_ handle: OpaquePointer?, code: Int32, sql: String?) -> SQLiteError {
        guard let handle else {
            return SQLiteError(extendedResultCode: code, message: String(cString: sqlite3_errstr(code)), sql: sql)
        }
        let extended = sqlite3_extended_errcode(handle)
        // The handle's code is only about this failure when its primary code agrees with what was returned.
        let reported = (extended & 0xFF) == (code & 0xFF) ? extended : code
        let message = sqlite3_errmsg(handle).map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
        return SQLiteError(extendedResultCode: reported, message: message, sql: sql)
    }

    /// The database is locked by another connection (`SQLITE_BUSY`) or by a conflicting use of this
    /// one (`SQLITE_LOCKED`): the operation may succeed if retried later.
    package var isBusy: Bool {
        resultCode == SQLITE_BUSY || resultCode == SQLITE_LOCKED
    }

    /// The file is not a usable SQLite database (`SQLITE_CORRUPT` or `SQLITE_NOTADB`).
    package var isCorrupt: Bool {
        resultCode == SQLITE_CORRUPT || resultCode == SQLITE_NOTADB
    }

    /// The disk (or the file system's quota) is full (`SQLITE_FULL`): the write was not made.
    package var isDiskFull: Bool {
        resultCode == SQLITE_FULL
    }

    /// A value of the wrong storage class (`SQLITE_MISMATCH`): SQLite refused one, or a required column
    /// read back NULL or as another class (see ``Row/requiredInt64(_:)``), which means a damaged row.
    package var isTypeMismatch: Bool {
        resultCode == SQLITE_MISMATCH
    }

    package var description: String {
        let codeName = String(cString: sqlite3_errstr(resultCode))
        var text = "SQLite error \(extendedResultCode) (\(codeName)): \(message)"
        if let sql {
            text += " — while running: \(sql)"
        }
        return text
    }
}
