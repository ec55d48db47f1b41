import Haul

/// `haul queue ACTION ...`: the durable queue. The group itself reads only `--state` (and
/// `--help`) before the action; everything after the action is parsed by that action's command,
/// which takes only its own options.
enum QueueCommand {
    struct Subcommand: Sendable {
        let name: String
        let aliases: [String]
        let command: any ParsableCommand.Type
    }

    static let subcommands: [Subcommand] = [
        Subcommand(name: "add", aliases: [], command: QueueAddCommand.self),
        Subcommand(name: "list", aliases: ["ls"], command: QueueListCommand.self),
        Subcommand(name: "pause", aliases: [], command: QueuePauseCommand.self),
        Subcommand(name: "resume", aliases: [], command: QueueResumeCommand.self),
        Subcommand(name: "cancel", aliases: [], command: QueueCancelCommand.self),
        Subcommand(name: "rm", aliases: ["remove"], command: QueueRemoveCommand.self),
        Subcommand(name: "run", aliases: [], command: QueueRunCommand.self),
    ]

    static let commandName = "haul queue"
    static let help = OptionSpec(short: "h", long: "help", value: nil, help: "show this help")
    static var specs: [OptionSpec] { StoreOptions.specs + [help] }

    static var helpText: String {
        let actions = subcommands.map { sub in
            "  " + sub.name.padding(toLength: 9, withPad: " ", startingAt: 0) + sub.command.abstract
        }.joined(separator: "\n")
        return """
            Usage: haul queue ACTION [options]

            The queue lives in a SQLite database in $XDG_DATA_HOME/haul (else ~/.local/share/haul),
            or in --state DIR. `queue run` downloads until nothing is left, resuming whatever an earlier
            run left behind, even one killed with kill -9. Several `queue run` may share a store: each
            download is leased to one process at a time.

            Actions:
            \(actions)

            Each action takes only its own options: see 'haul queue ACTION --help'.

            Options:
            \(ArgumentParser(specs: specs).helpText())

            \(ExitCode.table)
            """
    }

    static func main(_ arguments: [String]) async -> ExitCode {
        var parser = ArgumentParser(specs: specs)
        parser.stopsAtFirstOperand = true
        parser.unknownOption = { typed in CommandDirectory.refusal(of: typed, by: commandName) }
        let parsed: ParsedArguments
        do throws(UsageError) {
            parsed = try parser.parse(arguments)
        } catch {
            return usageError(error.message)
        }
        if parsed.flag(help.long) {
            print(helpText)
            return .success
        }
        guard let action = parsed.positional.first else {
            return usageError("queue needs an action: add, list, pause, resume, cancel, rm or run")
        }
        guard let subcommand = subcommands.first(where: { $0.name == action || $0.aliases.contains(action) }) else {
            return usageError("unknown queue action \"\(action)\"")
        }
        // --state given before the action is the action's: it comes first, so a `--` among the
        // action's arguments cannot swallow it.
        let state = StoreOptions(parsed).stateDirectory.map { ["--state", $0] } ?? []
        return await subcommand.command.main(state + parsed.positional.dropFirst())
    }

    private static func usageError(_ message: String) -> ExitCode {
        Presenter(mode: .normal).error("\(message)\nTry 'haul queue --help' for more information.")
        return .usage
    }
}
