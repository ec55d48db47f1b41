import Foundation

/// Identifies the running kernel boot, so a record can tell a killed process (page cache intact)
/// from a reboot or power cut (unsynced data possibly lost).
public enum BootID {
    /// The current boot's id on Linux; nil where the system does not provide one.
    public static let current: String? = {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
            return nil
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }()
}
