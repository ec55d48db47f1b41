/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and duplicates are kept because they matter on the wire (several `Set-Cookie`, for example).
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// One header field, its name as written.
    public struct Field: Sendable, Equatable {
        /// The field name, case as given (compared case-insensitively by `HTTPHeaders`).
        public let name: String
        /// The field value.
        public let value: String
        /// A field with this name and value.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Every field, in order, duplicates included.
    public private(set) var fields: [Field]

    /// Headers made of these fields, in this order.
    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// Headers made of `(name, value)` pairs, in this order.
    public init(_ pairs: [(String, String)]) {
        self.fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value of the named field, compared case-insensitively.
    public subscript(name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    /// Whether a field with this name is present.
    public func contains(_ name: String) -> Bool {
        self[name] != nil
    }

    /// Appends a field, keeping any existing ones of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field of this name with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field of this name.
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.sameName($0.name, name) }
    }

    /// Whether two field names are the same, ASCII letters compared without case (field names
    /// are ASCII tokens); no string is made, since every response is looked up many times.
    static func sameName(_ one: String, _ other: String) -> Bool {
        // Names of other lengths differ (a native string knows its byte count): most lookups end here.
        guard one.utf8.count == other.utf8.count else { return false }
        var first = one.utf8.makeIterator()
        var second = other.utf8.makeIterator()
        while true {
            switch (first.next(), second.next()) {
            case (nil, nil):
                return true
            case (let a?, let b?):
                if a != b && Self.lowered(a) != Self.lowered(b) { return false }
            default:
                return false
            }
        }
    }

    private static func lowered(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// Iterates over the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }

    /// The number of fields, duplicates included.
    public var count: Int { fields.count }
}

/// Why a "Name: value" line from a user or an RPC client cannot be a request header.
package enum HeaderLineError: Error, Sendable, Equatable {
    /// No colon, or nothing before it.
    case notNameAndValue
    /// Whitespace in the name or a line break in the value (header injection).
    case invalid
    /// `Range` and `If-Range` are Haul's own (they decide what is spliced).
    case reserved(String)
}

extension HTTPHeaders {
    /// The one rule for headers supplied from outside (`--header`, aria2's `header` option).
    package static func field(line: String) throws(HeaderLineError) -> Field {
        guard let colon = line.firstIndex(of: ":"), line.startIndex != colon else { throw .notNameAndValue }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces)
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, !name.contains(where: { $0.isWhitespace || $0.isNewline }), !value.contains(where: \.isNewline) else {
            throw .invalid
        }
        if ["range", "if-range"].contains(name.lowercased()) { throw .reserved(name) }
        return Field(name: name, value: value)
    }
}
