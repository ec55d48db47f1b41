import Foundation

extension JSONValue {
    /// This value read as a `T` through its `Decodable` conformance, as `JSONDecoder` reads it with
    /// its default strategies (a missing key is `keyNotFound`, a `null` where a value is needed
    /// `valueNotFound`, a value of another kind `typeMismatch`, each with the path to it).
    package func decoded<T: Decodable>(as type: T.Type) throws(DecodingError) -> T {
        do {
            return try T(from: ValueDecoder(value: self, codingPath: []))
        } catch let error as DecodingError {
            throw error
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "\(error)", underlyingError: error))
        }
    }

    /// The value `text` holds, read as a `T`: text that is not JSON is `dataCorrupted` with an
    /// empty coding path (as `JSONDecoder` has it).
    package static func decode<T: Decodable>(_ type: T.Type, from text: String) throws(DecodingError) -> T {
        let value: JSONValue
        do {
            value = try JSONParser.parse(Data(text.utf8))
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not JSON: \(error)", underlyingError: error))
        }
        return try value.decoded(as: type)
    }
}

/// The `Decoder` behind `JSONValue.decoded(as:)`.
private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let fields) = value else {
            throw Self.mismatch([String: JSONValue].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(fields: fields, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw Self.mismatch([JSONValue].self, value, codingPath)
        }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleContainer(value: value, codingPath: codingPath)
    }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        if value == .null {
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "expected a \(type), found null"))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "expected a \(type), found \(value.kind)"))
    }

    /// `value` as a `T`: a primitive directly, anything else through its own conformance (the
    /// path to it made only for an error or a nested value: arrays of numbers are most of a
    /// record's values). The type is compared before anything is cast.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, at path: @autoclosure () -> [any CodingKey]) throws -> T {
        switch ObjectIdentifier(T.self) {
        case ObjectIdentifier(String.self):
            guard case .string(let text) = value else { throw mismatch(type, value, path()) }
            return try cast(text, path())
        case ObjectIdentifier(Bool.self):
            guard case .bool(let flag) = value else { throw mismatch(type, value, path()) }
            return try cast(flag, path())
        case ObjectIdentifier(Int64.self): return try cast(try integer(Int64.self, value, path()), path())
        case ObjectIdentifier(Int.self): return try cast(try integer(Int.self, value, path()), path())
        case ObjectIdentifier(UInt8.self): return try cast(try integer(UInt8.self, value, path()), path())
        case ObjectIdentifier(UInt64.self): return try cast(try integer(UInt64.self, value, path()), path())
        case ObjectIdentifier(Double.self): return try cast(try double(value, path()), path())
        case ObjectIdentifier(Float.self): return try cast(Float(try double(value, path())), path())
        default:
            if let integer = T.self as? any FixedWidthInteger.Type {
                return try cast(try Self.integer(integer, value, path()), path())
            }
            return try T(from: ValueDecoder(value: value, codingPath: path()))
        }
    }

    private static func cast<Value, T>(_ value: Value, _ path: @autoclosure () -> [any CodingKey]) throws -> T {
        guard let typed = value as? T else { throw mismatch(T.self, .null, path()) }
        return typed
    }

    static func double(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case .double(let number): return number
        case .int(let number): return Double(number)
        case .uint(let number): return Double(number)
        default: throw mismatch(Double.self, value, path())
        }
    }

    /// An integer of type `type`; a number that is not whole or does not fit is damage.
    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
        let fitting: I?
        switch value {
        case .int(let number): fitting = I(exactly: number)
        case .uint(let number): fitting = I(exactly: number)
        case .double: fitting = nil
        default: throw mismatch(type, value, path())
        }
        guard let fitting else {
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "the number does not fit in \(type)"))
        }
        return fitting
    }
}

extension JSONValue {
    /// What kind of value this is, for a message.
    fileprivate var kind: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .uint, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    private func field(_ key: Key) throws -> JSONValue {
        guard let value = fields[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try field(key) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ValueDecoder.decode(type, from: try field(key), at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: try field(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try field(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: fields["super"] ?? .null, codingPath: codingPath + [JSONCodingKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private var path: [any CodingKey] { codingPath + [JSONCodingKey(index: currentIndex)] }

    private func next(_ type: Any.Type) throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "the array has no more values"))
        }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard try next(Never.self) == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try ValueDecoder.decode(type, from: try next(type), at: path)
        currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let container = try ValueDecoder(value: try next([String: JSONValue].self), codingPath: path).container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try ValueDecoder(value: try next([JSONValue].self), codingPath: path).unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = ValueDecoder(value: try next(Any.self), codingPath: path)
        currentIndex += 1
        return decoder
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ValueDecoder.decode(type, from: value, at: codingPath)
    }
}
