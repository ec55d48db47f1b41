import Foundation

/// Executables the package builds, found beside the running test bundle.
package enum BuiltBinary {
    /// The path of the executable `name` that `swift build --build-tests` put beside the test
    /// bundle. `HAUL_BINARY` overrides it (for `haul`). Otherwise the directories above the running
    /// test executable (`.../debug/HaulPackageTests.xctest`) are searched.
    package static func path(_ name: String = "haul") throws -> String {
        if name == "haul", let override = ProcessInfo.processInfo.environment["HAUL_BINARY"], !override.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: override) else {
                throw TestSupportError("HAUL_BINARY=\(override) is not an executable file")
            }
            return override
        }
        var starts: [URL] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            starts.append(URL(fileURLWithPath: executable))
        }
        if let executable = Bundle.main.executableURL { starts.append(executable) }
        starts.append(Bundle.main.bundleURL)
        for start in starts {
            var directory = start.deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = directory.appendingPathComponent(name).path
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
                    FileManager.default.isExecutableFile(atPath: candidate)
                {
                    return candidate
                }
                directory = directory.deletingLastPathComponent()
            }
        }
        throw TestSupportError(
            "the \(name) binary was not found near the test executable (\(starts.map(\.path))); "
                + "build it with `swift build --build-tests` or set HAUL_BINARY")
    }
}
