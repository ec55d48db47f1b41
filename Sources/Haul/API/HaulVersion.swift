/// The version reported in the User-Agent and by `haul --version`.
package enum HaulVersion {
    /// The version, `MAJOR.MINOR.PATCH`.
    package static let current = "0.1.0"
}
