/// A request the server answers with an error status and then closes the connection: the bytes
/// that follow cannot be trusted to start the next request.
struct HTTPRefusal: Error, Sendable, Equatable {
    let status: Int
    /// A line for the person reading the response body.
    let reason: String

    init(_ status: Int, _ reason: String) {
        self.status = status
        self.reason = reason
    }
}
