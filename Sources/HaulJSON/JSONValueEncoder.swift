import Foundation

extension JSONValue {
    /// `value` as the JSON its `Encodable` conformance describes, as `JSONEncoder` would make it
    /// with its default strategies: every stored property the conformance encodes is here (a
    /// synthesized one encodes them all, leaving out only an optional that is nil), a `Date` is
    /// its seconds since 2001, an unsigned integer above `Int64.max` is `.uint`.
    package init(encoding value: some Encodable) throws(EncodingError) {
        self = try ValueEncoder.root(encoding: value)?.value ?? .object([:])
    }
}

extension JSONWriter {
    /// `value` as JSON text, as `JSONValue(encoding: value).text` gives it, written straight from
    /// what the conformance encoded (no `JSONValue` tree in between: the resume record is written
    /// every second per download and once per small file).
    package static func text(encoding value: some Encodable) throws(EncodingError) -> String {
        let root = try ValueEncoder.root(encoding: value)
        var writer = JSONWriter()
        writer.write(root ?? .object(ObjectSlot()))
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    fileprivate mutating func write(_ slot: Slot) {
        switch slot {
        case .value(let value): write(value)
        case .array(let array):
            append(byte: UInt8(ascii: "["))
            for (offset, element) in array.elements.enumerated() {
                if offset > 0 { append(byte: UInt8(ascii: ",")) }
                write(element)
            }
            append(byte: UInt8(ascii: "]"))
        case .object(let object):
            append(byte: UInt8(ascii: "{"))
            for (offset, (key, field)) in object.sortedFields.enumerated() {
                if offset > 0 { append(byte: UInt8(ascii: ",")) }
                write(string: key)
                append(byte: UInt8(ascii: ":"))
                write(field)
            }
            append(byte: UInt8(ascii: "}"))
        }
    }
}

/// A value being encoded: a finished one, or a container still being filled (containers are
/// reference types, because `Encoder` hands out containers that outlive the call that made them).
private enum Slot {
    case value(JSONValue)
    case object(ObjectSlot)
    case array(ArraySlot)

    var value: JSONValue {
        switch self {
        case .value(let value): return value
        case .object(let object): return .object(Dictionary(object.fields.map { ($0.key, $0.slot.value) }, uniquingKeysWith: { _, last in last }))
        case .array(let array): return .array(array.elements.map(\.value))
        }
    }
}

/// An object's members in the order they were encoded (a key encoded twice: the last counts).
private final class ObjectSlot {
    private(set) var fields: [(key: String, slot: Slot)] = []

    func set(_ key: String, _ slot: Slot) {
        fields.append((key, slot))
    }

    /// The members sorted by key, the last of a repeated key only.
    var sortedFields: [(key: String, slot: Slot)] {
        let sorted = fields.indices.sorted { (fields[$0].key, $0) < (fields[$1].key, $1) }
        var members: [(key: String, slot: Slot)] = []
        members.reserveCapacity(sorted.count)
        for (position, index) in sorted.enumerated() where position + 1 == sorted.count || fields[sorted[position + 1]].key != fields[index].key {
            members.append(fields[index])
        }
        return members
    }
}

private final class ArraySlot {
    var elements: [Slot] = []
}

/// The `Encoder` behind `JSONValue(encoding:)`.
private final class ValueEncoder: Encoder {
    /// What `value`'s conformance encoded (nil: nothing); any error it threw as an `EncodingError`.
    static func root(encoding value: some Encodable) throws(EncodingError) -> Slot? {
        let encoder = ValueEncoder(codingPath: [])
        do {
            try value.encode(to: encoder)
        } catch let error as EncodingError {
            throw error
        } catch {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: [], debugDescription: "\(error)", underlyingError: error))
        }
        return encoder.root
    }

    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// What was encoded: set by the first container asked for.
    var root: Slot?

    init(codingPath: [any CodingKey]) {
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: ObjectSlot
        if case .object(let existing)? = root {
            object = existing
        } else {
            object = ObjectSlot()
            root = .object(object)
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: ArraySlot
        if case .array(let existing)? = root {
            array = existing
        } else {
            array = ArraySlot()
            root = .array(array)
        }
        return UnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(encoder: self)
    }

    /// `value` as a slot: a primitive directly, anything else through its own conformance (the
    /// path to it made only then: arrays of numbers are most of a record's values).
    static func slot<T: Encodable>(_ value: T, at codingPath: @autoclosure () -> [any CodingKey]) throws -> Slot {
        if let primitive = primitive(value) { return .value(primitive) }
        let encoder = ValueEncoder(codingPath: codingPath())
        try value.encode(to: encoder)
        return encoder.root ?? .object(ObjectSlot())
    }

    /// The JSON of a value JSON holds directly; nil for any other. The type is compared before
    /// anything is cast: a failed cast costs far more than a comparison.
    static func primitive<T: Encodable>(_ value: T) -> JSONValue? {
        switch ObjectIdentifier(T.self) {
        case ObjectIdentifier(String.self): return (value as? String).map(JSONValue.string)
        case ObjectIdentifier(Bool.self): return (value as? Bool).map(JSONValue.bool)
        case ObjectIdentifier(Int.self): return (value as? Int).map { .int(Int64($0)) }
        case ObjectIdentifier(Int64.self): return (value as? Int64).map(JSONValue.int)
        case ObjectIdentifier(UInt8.self): return (value as? UInt8).map { .int(Int64($0)) }
        case ObjectIdentifier(Double.self): return (value as? Double).map(JSONValue.double)
        case ObjectIdentifier(UInt64.self): return (value as? UInt64).map(unsigned)
        case ObjectIdentifier(Int32.self): return (value as? Int32).map { .int(Int64($0)) }
        case ObjectIdentifier(Int16.self): return (value as? Int16).map { .int(Int64($0)) }
        case ObjectIdentifier(Int8.self): return (value as? Int8).map { .int(Int64($0)) }
        case ObjectIdentifier(UInt.self): return (value as? UInt).map { unsigned(UInt64($0)) }
        case ObjectIdentifier(UInt32.self): return (value as? UInt32).map { .int(Int64($0)) }
        case ObjectIdentifier(UInt16.self): return (value as? UInt16).map { .int(Int64($0)) }
        case ObjectIdentifier(Float.self): return (value as? Float).map { .double(Double($0)) }
        // Bytes (a digest's saved state): an array of numbers, without a container per byte.
        case ObjectIdentifier([UInt8].self): return (value as? [UInt8]).map { .array($0.map { .int(Int64($0)) }) }
        default: return nil
        }
    }

    static func unsigned(_ number: UInt64) -> JSONValue {
        number <= UInt64(Int64.max) ? .int(Int64(number)) : .uint(number)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: ObjectSlot
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        object.set(key.stringValue, .value(.null))
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws { object.set(key.stringValue, .value(.bool(value))) }
    mutating func encode(_ value: String, forKey key: Key) throws { object.set(key.stringValue, .value(.string(value))) }
    mutating func encode(_ value: Double, forKey key: Key) throws { object.set(key.stringValue, .value(.double(value))) }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.set(key.stringValue, .value(.int(Int64(value)))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.set(key.stringValue, .value(.int(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { object.set(key.stringValue, .value(ValueEncoder.unsigned(value))) }

    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        object.set(key.stringValue, try ValueEncoder.slot(value, at: codingPath + [key]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectSlot()
        object.set(key.stringValue, .object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = ArraySlot()
        object.set(key.stringValue, .array(nested))
        return UnkeyedContainer(array: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(key: "super")
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(key: key.stringValue)
    }

    private func superEncoder(key: String) -> any Encoder {
        let nested = ObjectSlot()
        object.set(key, .object(nested))
        let encoder = ValueEncoder(codingPath: codingPath + [JSONCodingKey(key)])
        encoder.root = .object(nested)
        return encoder
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let array: ArraySlot
    let codingPath: [any CodingKey]
    var count: Int { array.elements.count }

    private var nextPath: [any CodingKey] { codingPath + [JSONCodingKey(index: array.elements.count)] }

    mutating func encode(_ value: UInt8) throws { array.elements.append(.value(.int(Int64(value)))) }

    mutating func encodeNil() throws { array.elements.append(.value(.null)) }

    mutating func encode(_ value: some Encodable) throws {
        array.elements.append(try ValueEncoder.slot(value, at: nextPath))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectSlot()
        let path = nextPath
        array.elements.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(object: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = ArraySlot()
        let path = nextPath
        array.elements.append(.array(nested))
        return UnkeyedContainer(array: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let nested = ObjectSlot()
        let encoder = ValueEncoder(codingPath: nextPath)
        array.elements.append(.object(nested))
        encoder.root = .object(nested)
        return encoder
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.root = .value(.null) }

    mutating func encode(_ value: some Encodable) throws {
        encoder.root = try ValueEncoder.slot(value, at: codingPath)
    }
}

/// A key made at run time: a `super` key, or an array index.
struct JSONCodingKey: CodingKey {
    private let name: String?
    let intValue: Int?

    /// `Index 3` for an index, as `JSONDecoder` names it (made when asked: rarely).
    var stringValue: String { name ?? "Index \(intValue ?? 0)" }

    init(_ string: String) {
        name = string
        intValue = nil
    }

    init(index: Int) {
        name = nil
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }

    init?(intValue: Int) { self.init(index: intValue) }
}
