import Foundation
import HaulCore
import HaulJSON

// A row of `downloads` read back as a `StoredDownload`; no I/O (a `Row` is a value).
extension StoredDownload {
    /// Reads a row of `downloads`. Every row with an id reads: a value that cannot be read back
    /// (of the wrong type, a state Haul does not know, options or headers that are not the JSON
    /// Haul writes) is named in `damage`, and the field holds a placeholder nothing acts upon (an
    /// unreadable state reads as `.failed`): a damaged item never runs, it is shown failed with
    /// the reason, and it can be removed. Throws only for a row without an id, which SQLite's
    /// `INTEGER PRIMARY KEY` rules out.
    init(row: Row) throws(StoreError) {
        guard let id = row.int64("id") else { throw StoreError(.corruptStore, "a queue row has no id") }
        var reader = ColumnReader(row: row)
        self.init(
            id: id,
            url: reader.required("url", "URL", placeholder: "") { $0.string },
            method: reader.required("method", "method", placeholder: "") { $0.string },
            headers: reader.required("headers", "headers", placeholder: []) { $0.string.flatMap(Self.decodeHeaders) },
            body: reader.optional("body", "body") { $0.blob },
            destinationKind: reader.required("destination_kind", "destination kind", placeholder: .file) {
                $0.string.flatMap(DestinationKind.init(rawValue:))
            },
            destination: reader.required("destination", "destination", placeholder: "") { $0.string },
            range: reader.optional("range_spec", "range") { $0.string },
            existingPolicy: reader.required("existing_policy", "existing-file policy", placeholder: .refuse) {
                $0.string.flatMap(ExistingFilePolicy.init(rawValue:))
            },
            priority: reader.required("priority", "priority", placeholder: 0) { $0.int },
            state: reader.required("state", "state", placeholder: .failed) { $0.string.flatMap(DownloadState.init(rawValue:)) },
            bytes: reader.required("bytes", "byte count", placeholder: 0) { $0.int64 },
            totalBytes: reader.optional("total_bytes", "total size") { $0.int64 },
            bytesPerSecond: reader.required("speed", "speed", placeholder: 0) { $0.double },
            finalPath: reader.optional("final_path", "final path") { $0.string },
            lastError: reader.optional("last_error", "last error") { $0.string },
            errorCategory: reader.optional("error_category", "error category") { $0.string },
            recordText: reader.optional("record", "resume record") { $0.string },
            attempts: reader.required("attempts", "attempt count", placeholder: 0) { $0.int },
            options: reader.options(),
            createdAt: Date(timeIntervalSince1970: reader.required("created_at", "creation time", placeholder: 0) { $0.double }),
            updatedAt: Date(timeIntervalSince1970: reader.required("updated_at", "update time", placeholder: 0) { $0.double }),
            damage: reader.damage,
            leaseEpoch: row.int64("lease_epoch") ?? 0,
            leaseOwner: row.string("lease_owner").flatMap(LeaseOwner.init(encoded:)),
            moveIntent: row.string("move_intent").flatMap(MoveIntent.read))
    }

    /// The `headers` column: JSON pairs `[[name, value], ...]`, as `QueueStore.encodeHeaders` writes.
    static func decodeHeaders(_ text: String) -> [HTTPHeaders.Field]? {
        // What most rows hold (and what a settled one is left with): not worth a JSON parser.
        if text == "[]" { return [] }
        guard let pairs = try? JSONValue.decode([[String]].self, from: text), pairs.allSatisfy({ $0.count == 2 }) else { return nil }
        return pairs.map { HTTPHeaders.Field(name: $0[0], value: $0[1]) }
    }
}

/// Reads the columns of one row, noting each that cannot be read instead of stopping at it.
private struct ColumnReader {
    let row: Row
    private var damaged: [RowDamage.Column] = []
    /// Where the next column is looked for first: the columns are read in about their order.
    private var hint = 0

    init(row: Row) {
        self.row = row
    }

    var damage: RowDamage? {
        damaged.isEmpty ? nil : RowDamage(columns: damaged)
    }

    /// A column every row has: NULL, or a value `read` does not accept, is damage.
    mutating func required<T>(_ column: String, _ label: String, placeholder: T, _ read: (StoreValue) -> T?) -> T {
        let value = self.value(column)
        if let result = read(value) { return result }
        note(column, label, value.isNull ? "it is missing" : Self.unreadable(value))
        return placeholder
    }

    /// A column that may be NULL: only a value `read` does not accept is damage.
    mutating func optional<T>(_ column: String, _ label: String, _ read: (StoreValue) -> T?) -> T? {
        let value = self.value(column)
        if value.isNull { return nil }
        if let result = read(value) { return result }
        note(column, label, Self.unreadable(value))
        return nil
    }

    /// The options column (NULL for rows added before options were stored).
    mutating func options() -> StoredOptions? {
        guard let text = optional("options", "options", { $0.string }) else { return nil }
        switch StoredOptions.read(text) {
        case .success(let options):
            return options
        case .failure(let problem):
            damaged.append(RowDamage.Column(name: "options", account: "its stored options are damaged: \(problem.detail)"))
            return nil
        }
    }

    /// The value of `column` (NULL when there is none), looked for from just after the last one.
    private mutating func value(_ column: String) -> StoreValue {
        if let index = row.index(of: column, from: hint) {
            hint = index + 1
            return row[index]
        }
        return row[column] ?? .null
    }

    private static func unreadable(_ value: StoreValue) -> String {
        let article = value.storageClass == "integer" ? "an" : "a"
        return "it holds \(article) \(value.storageClass) value Haul cannot read"
    }

    private mutating func note(_ column: String, _ label: String, _ detail: String) {
        let verb = label.hasSuffix("s") ? "are" : "is"
        damaged.append(RowDamage.Column(name: column, account: "its stored \(label) \(verb) damaged: \(detail)"))
    }
}
