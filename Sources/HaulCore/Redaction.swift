import Foundation

/// What of a request may be shown or kept: a URL without its password, headers without their
/// credentials. Every output (events, `--json`, `queue list`, messages) shows requests through
/// this, and the queue keeps no credential of a download that can no longer run.
public enum Redaction {
    /// Header fields whose values are credentials (compared lowercased): the ones a redirect to
    /// another origin also drops.
    public static let secretHeaderNames = Set(RedirectPolicy.credentialHeaders.map { $0.lowercased() })

    /// The URL with `user:password@` shown as `user:***@` (a user alone is kept).
    public static func url(_ text: String) -> String {
        replacingPassword(in: text, with: "***")
    }

    /// The URL as text with `user:password@` shown as `user:***@`.
    public static func url(_ url: URL) -> String {
        self.url(url.absoluteString)
    }

    /// The URL without its password (`user:password@` becomes `user@`).
    public static func withoutPassword(_ text: String) -> String {
        replacingPassword(in: text, with: nil)
    }

    /// The header fields without credentials.
    public static func publicHeaders(_ fields: [HTTPHeaders.Field]) -> [HTTPHeaders.Field] {
        fields.filter { !secretHeaderNames.contains($0.name.lowercased()) }
    }

    private static func replacingPassword(in text: String, with replacement: String?) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = replacement
        return components.string ?? text
    }
}
