import Foundation

/// What of a request may be shown: a URL without its password, a header without a credential.
/// Every output (events, `--json`, `queue list`, messages) shows requests through this.
public enum Redaction {
    /// Header fields whose values are credentials.
    public static let secretHeaderNames: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// The URL with `user:password@` shown as `user:***@` (a user alone is kept).
    public static func url(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }

    public static func url(_ url: URL) -> String {
        self.url(url.absoluteString)
    }

    /// A header's value as it may be shown: `***` for credentials.
    public static func headerValue(name: String, value: String) -> String {
        secretHeaderNames.contains(name.lowercased()) ? "***" : value
    }
}
