import HaulCore

/// A small declarative command-line parser: options are described once, and both parsing and
/// `--help` come from the description.
struct OptionSpec: Sendable {
    let short: Character?
    let long: String
    /// The value's placeholder in help; nil for a flag.
    let value: String?
    let help: String
    var repeatable = false
    /// The library's setting this option sets, when the library's messages may name it: they
    /// then name this option (`SettingNames.flags`).
    var setting: DownloadSetting?

    /// How messages name the option: `--checksum`, or `-H (--header)` when it was typed short.
    func named(typed: String) -> String {
        typed.hasPrefix("--") || short == nil ? "--\(long)" : "\(typed) (--\(long))"
    }

    /// Whether `typed` (`--long` or `-s`) is this option.
    func matches(typed: String) -> Bool {
        typed.hasPrefix("--") ? typed.dropFirst(2) == long : typed.dropFirst().first == short && typed.count == 2
    }
}

/// A usage error: the message is for the user; the exit code is 2.
struct UsageError: Error, Sendable {
    let message: String
}

/// What the parser found.
struct ParsedArguments: Sendable {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positional: [String] = []

    func value(_ long: String) -> String? { values[long]?.last }
    func all(_ long: String) -> [String] { values[long] ?? [] }
    func flag(_ long: String) -> Bool { flags.contains(long) }
}

struct ArgumentParser: Sendable {
    let specs: [OptionSpec]
    /// The error for an option that is not in `specs` (`--name` or `-n` as typed): a command
    /// answers with the commands that do take it.
    var unknownOption: @Sendable (_ typed: String) -> UsageError = { UsageError(message: "unknown option \($0)") }
    /// A command group (`haul queue ACTION ...`) reads its own options up to the first operand
    /// and leaves that operand and everything after it to the subcommand.
    var stopsAtFirstOperand = false

    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var result = ParsedArguments()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                result.positional.append(contentsOf: arguments[index...])
                break
            }
            if argument.hasPrefix("--") {
                var name = String(argument.dropFirst(2))
                var inline: String?
                if let equals = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                guard let spec = specs.first(where: { $0.long == name }) else {
                    throw unknownOption("--\(name)")
                }
                try take(spec, inline: inline, arguments, &index, into: &result)
            } else if argument.hasPrefix("-") && argument.count > 1 {
                var letters = Array(argument.dropFirst())
                while !letters.isEmpty {
                    let letter = letters.removeFirst()
                    guard let spec = specs.first(where: { $0.short == letter }) else {
                        throw unknownOption("-\(letter)")
                    }
                    let inline = spec.value != nil && !letters.isEmpty ? String(letters) : nil
                    if inline != nil { letters.removeAll() }
                    try take(spec, inline: inline, arguments, &index, into: &result)
                }
            } else if stopsAtFirstOperand {
                result.positional.append(contentsOf: arguments[(index - 1)...])
                break
            } else {
                result.positional.append(argument)
            }
        }
        return result
    }

    private func take(
        _ spec: OptionSpec,
        inline: String?,
        _ arguments: [String],
        _ index: inout Int,
        into result: inout ParsedArguments
    ) throws(UsageError) {
        guard spec.value != nil else {
            if inline != nil { throw UsageError(message: "--\(spec.long) takes no value") }
            result.flags.insert(spec.long)
            return
        }
        let value: String
        if let inline {
            value = inline
        } else {
            guard index < arguments.count else {
                throw UsageError(message: "--\(spec.long) needs a value")
            }
            value = arguments[index]
            index += 1
        }
        if !spec.repeatable, result.values[spec.long] != nil {
            throw UsageError(message: "--\(spec.long) was given twice")
        }
        result.values[spec.long, default: []].append(value)
    }

    /// The options part of `--help`.
    func helpText() -> String {
        specs.map { spec in
            let short = spec.short.map { "-\($0), " } ?? "    "
            let name = "--\(spec.long)" + (spec.value.map { " \($0)" } ?? "")
            let left = "  \(short)\(name)"
            let padding = String(repeating: " ", count: max(2, 30 - left.count))
            return left + padding + spec.help
        }.joined(separator: "\n")
    }
}
