/// Why `haul serve` cannot start.
public struct ServeError: Error, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
}
