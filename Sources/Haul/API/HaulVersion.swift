/// The version reported in the User-Agent and by `haul --version`.
public enum HaulVersion {
    /// The version, `MAJOR.MINOR.PATCH`.
    public static let current = "0.1.0"
}
