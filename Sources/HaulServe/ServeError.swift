/// Why `haul serve` cannot start.
package struct ServeError: Error, Sendable, Equatable {
    package let message: String
    package init(_ message: String) { self.message = message }
}
