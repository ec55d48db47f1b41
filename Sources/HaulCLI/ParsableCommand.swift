import Haul

/// One command of the `haul` tool, in swift-argument-parser's shape: it declares its options,
/// `init` parses them (each value converted or refused on its own), `validate()` checks how they
/// combine without touching anything, and only `run()` acts. `main` ties the three together and
/// turns whatever goes wrong into a message and an exit code.
protocol ParsableCommand: Sendable {
    /// How help and "Try ... --help" name it: `haul`, `haul queue run`.
    static var commandName: String { get }
    /// How messages name it when refusing an option; `commandName` unless that is unclear.
    static var displayName: String { get }
    /// One line for the list of a group's subcommands.
    static var abstract: String { get }
    /// The usage lines and the text that explains the command, above its options in `--help`.
    static var overview: String { get }
    /// The command's own options; `-h, --help` (and `-V, --version` with a `version`) are added.
    static var options: [OptionSpec] { get }
    /// Given, the command answers `-V, --version` with it.
    static var version: String? { get }

    /// Reads every option and operand into typed values; a value that cannot be one is refused.
    init(_ parsed: ParsedArguments) throws(UsageError)
    /// Checks how the parsed values combine (which may not be used together, what is missing).
    func validate() throws(UsageError)
    /// Does the work; parsing and validation are over.
    func run() async throws(CommandError) -> ExitCode
}

/// What `run()` reports instead of exiting: `main` prints it and picks the exit code.
enum CommandError: Error {
    /// The command line cannot be carried out (an unreadable `-i` list, no URL in it): exit 2.
    case usage(UsageError)
    /// The download, the queue or its store failed: the exit code of its category.
    case download(DownloadError)
}

extension ParsableCommand {
    static var displayName: String { commandName }
    static var version: String? { nil }
    func validate() throws(UsageError) {}

    static var helpSpec: OptionSpec { OptionSpec(short: "h", long: "help", value: nil, help: "show this help") }
    static var versionSpec: OptionSpec { OptionSpec(short: "V", long: "version", value: nil, help: "show the version") }

    /// Every option the command accepts, in the order `--help` lists them.
    static var allSpecs: [OptionSpec] {
        options + [helpSpec] + (version == nil ? [] : [versionSpec])
    }

    /// `--help`, generated from the specs.
    static var helpText: String {
        """
        \(overview)

        Options:
        \(ArgumentParser(specs: allSpecs).helpText())

        \(ExitCode.table)
        """
    }

    static var parser: ArgumentParser {
        var parser = ArgumentParser(specs: allSpecs)
        parser.unknownOption = { typed in CommandDirectory.refusal(of: typed, by: displayName) }
        return parser
    }

    /// Parse, validate, run; usage errors exit 2 with a pointer to this command's `--help`.
    static func main(_ arguments: [String]) async -> ExitCode {
        let command: Self
        do throws(UsageError) {
            let parsed = try parser.parse(arguments)
            if parsed.flag(helpSpec.long) {
                print(helpText)
                return .success
            }
            if let version, parsed.flag(versionSpec.long) {
                print("haul \(version)")
                return .success
            }
            command = try Self(parsed)
            try command.validate()
        } catch {
            return report(.usage(error))
        }
        do throws(CommandError) {
            return try await command.run()
        } catch {
            return report(error)
        }
    }

    static func report(_ error: CommandError) -> ExitCode {
        let presenter = Presenter(mode: .normal)
        switch error {
        case .usage(let usage):
            presenter.error("\(usage.message)\nTry '\(commandName) --help' for more information.")
            return .usage
        case .download(let failure):
            presenter.error(failure.shown)
            return ExitCode(failure)
        }
    }
}

/// A group of options that several commands compose (as swift-argument-parser's `@OptionGroup`):
/// declared once, parsed once, with the rules that belong to the group alone.
protocol ParsableOptions: Sendable {
    static var specs: [OptionSpec] { get }
    init(_ parsed: ParsedArguments) throws(UsageError)
}

/// Every command, so a command refusing an option can say which commands take it.
enum CommandDirectory {
    static let commands: [any ParsableCommand.Type] = [DownloadCommand.self, ServeCommand.self] + QueueCommand.subcommands.map(\.command)

    /// The error for an option `command` does not take: where it belongs, when another command takes it.
    static func refusal(of typed: String, by command: String) -> UsageError {
        var owners: [String] = []
        var spec: OptionSpec?
        for other in commands where other.displayName != command {
            guard let match = other.allSpecs.first(where: { $0.matches(typed: typed) }) else { continue }
            owners.append("'\(other.displayName)'")
            spec = match
        }
        guard let spec else { return UsageError(message: "unknown option \(typed)") }
        let list = owners.count > 1 ? owners.dropLast().joined(separator: ", ") + " and " + (owners.last ?? "") : owners.joined()
        return UsageError(message: "\(spec.named(typed: typed)) does not apply to '\(command)'; it belongs to \(list)")
    }
}
