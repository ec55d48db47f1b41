import Foundation

/// The `haul` command: `haul queue ACTION ...` manages the queue; anything else is a download.
/// Each command parses, validates and runs itself, and answers with its exit code.
func runCommand() async -> ExitCode {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "queue" {
        return await QueueCommand.main(Array(arguments.dropFirst()))
    }
    if arguments.first == "serve" {
        return await ServeCommand.main(Array(arguments.dropFirst()))
    }
    return await DownloadCommand.main(arguments)
}

exit(await runCommand().rawValue)
