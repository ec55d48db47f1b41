import Foundation

/// Identifies the running kernel boot, so a record can tell a killed process (page cache intact)
/// from a reboot or power cut (unsynced data possibly lost).
package enum BootID {
    /// The current boot's id (a UUID the kernel makes at each boot: `boot_id` on Linux,
    /// `kern.bootsessionuuid` on Apple platforms); nil where the system does not provide one.
    package static let current: String? = PlatformSeams.bootID()
}
