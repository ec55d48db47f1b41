import Foundation

/// The process's CPU use between two looks, as a share of the machine's cores.
struct CPUWatch {
    private var lastCPU = CPUWatch.processCPUSeconds()
    private var lastWall = ContinuousClock.now

    mutating func loadSinceLastLook() -> CPULoad {
        let cpu = Self.processCPUSeconds()
        let now = ContinuousClock.now
        let wall = (now - lastWall).inSeconds
        defer {
            lastCPU = cpu
            lastWall = now
        }
        return CPULoad(cpuSeconds: cpu - lastCPU, wallSeconds: wall, cores: ProcessInfo.processInfo.activeProcessorCount)
    }

    static func processCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return user + system
    }
}
