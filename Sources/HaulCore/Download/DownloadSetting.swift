/// A setting a message can name, so that the library and the command line each call it by their
/// own name: the library by its property (`existingFile: .overwrite`), `haul` by its flag
/// (`--force`). A struct with a private name, so settings can be added without breaking callers.
public struct DownloadSetting: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier (`overwrite`, `max-size`, ...).
    public let id: String
    /// The setting as the library calls it, e.g. `existingFile: .overwrite`.
    public let name: String

    package init(_ id: String, _ name: String) {
        self.id = id
        self.name = name
    }

    /// `DownloadRequest.existingFile = .overwrite`: replace a file at the destination.
    public static let overwrite = DownloadSetting("overwrite", "existingFile: .overwrite")
    /// `DownloadRequest.existingFile = .continueIt`: take the file at the destination as a partial.
    public static let continueExisting = DownloadSetting("continue", "existingFile: .continueIt")
    /// Running the download on the libcurl engine (`TransportEngine.curl`).
    public static let curlEngine = DownloadSetting("curl-engine", "engine: .curl")
    /// `DownloadRequest.rateLimiter`.
    public static let rateLimit = DownloadSetting("limit-rate", "rateLimiter")

    /// `DownloadRequest.destination = .directory(...)`: a file inside a directory, named from the response.
    public static let directoryDestination = DownloadSetting("directory", "destination: .directory")

    /// Every setting a message can name.
    public static let all: [DownloadSetting] = [.overwrite, .continueExisting, .curlEngine, .rateLimit, .directoryDestination] + ofOptions

    public var description: String { name }
}

/// What each setting is called where a message is shown: `.library` (the property names), or a
/// front end's own (the `haul` command's flags).
package struct SettingNames: Sendable {
    private let names: [DownloadSetting: String]

    /// These names; a setting not among them keeps its library name.
    package init(_ names: [DownloadSetting: String]) {
        self.names = names
    }

    /// The library's names (`DownloadSetting.name`).
    package static let library = SettingNames([:])

    /// What `setting` is called here.
    package func name(of setting: DownloadSetting) -> String {
        names[setting] ?? setting.name
    }
}

/// A message that may name settings: written as a string literal with `\(setting: .overwrite)`
/// where a setting is named, shown with the library's names (`description`) or another front
/// end's (`rendered(_:)`).
package struct SettingText: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation {
    fileprivate enum Part: Sendable, Hashable {
        case text(String)
        case setting(DownloadSetting)
    }

    private var parts: [Part]

    /// Text that names no setting.
    package init(_ text: String) {
        parts = [.text(text)]
    }

    package init(stringLiteral value: String) {
        self.init(value)
    }

    package init(stringInterpolation: Interpolation) {
        parts = stringInterpolation.parts
    }

    /// Builds a `SettingText` from a literal.
    package struct Interpolation: StringInterpolationProtocol {
        fileprivate var parts: [Part] = []

        package init(literalCapacity: Int, interpolationCount: Int) {}

        package mutating func appendLiteral(_ literal: String) {
            append(literal)
        }

        /// A named setting.
        package mutating func appendInterpolation(setting: DownloadSetting) {
            parts.append(.setting(setting))
        }

        /// Another message, its settings kept.
        package mutating func appendInterpolation(_ text: SettingText) {
            for part in text.parts {
                if case .text(let literal) = part { append(literal) } else { parts.append(part) }
            }
        }

        /// Any value, as `String(describing:)` shows it.
        package mutating func appendInterpolation<Value>(_ value: Value) {
            append(String(describing: value))
        }

        private mutating func append(_ literal: String) {
            guard !literal.isEmpty else { return }
            if case .text(let previous) = parts.last {
                parts[parts.count - 1] = .text(previous + literal)
            } else {
                parts.append(.text(literal))
            }
        }
    }

    /// The settings the text names, in order: what the reader may change.
    package var settings: [DownloadSetting] {
        parts.compactMap { part in
            if case .setting(let setting) = part { return setting }
            return nil
        }
    }

    /// The text with each setting called by `names`.
    package func rendered(_ names: SettingNames) -> String {
        parts.map { part in
            switch part {
            case .text(let text): return text
            case .setting(let setting): return names.name(of: setting)
            }
        }.joined()
    }

    /// The text with `transform` applied to each run of plain text (redaction), the settings kept.
    package func mappingText(_ transform: (String) -> String) -> SettingText {
        var mapped = self
        mapped.parts = parts.map { part in
            if case .text(let text) = part { return .text(transform(text)) }
            return part
        }
        return mapped
    }

    /// The text with the library's names.
    package var description: String { rendered(.library) }
}
