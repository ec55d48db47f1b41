import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// Only the master PID this object started is signalled; its workers only when SIGTERM was not enough.
extension NginxServer {
    static func terminate(_ process: Process) {
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        if process.isRunning {
            // If SIGTERM is not enough, the workers would outlive a SIGKILLed master; note them now.
            let workers = childPIDs(of: pid)
            kill(pid, SIGTERM)
            if !waitForExit(process, timeout: stopTimeout) {
                kill(pid, SIGKILL)
                for worker in workers { kill(worker, SIGKILL) }
            }
        }
        process.waitUntilExit()
    }

    private static func waitForExit(_ process: Process, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() >= deadline { return false }
            usleep(10_000)
        }
        return true
    }

    private static func childPIDs(of pid: Int32) -> [Int32] {
        let path = "/proc/\(pid)/task/\(pid)/children"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}
