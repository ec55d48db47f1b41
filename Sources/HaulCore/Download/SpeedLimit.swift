/// The bounds of a speed limit, whichever door it comes in by (`--limit-rate`, aria2's
/// `max-download-limit` and `max-overall-download-limit`): one rule, checked where the number
/// enters, so a limit that is taken is one every part of Haul can hold and show exactly.
package enum SpeedLimit {
    /// The largest limit taken, in bytes per second: 1 TiB/s (`1048576M` as aria2 writes it,
    /// `1024G` for `--limit-rate`). No link a download runs over today comes near it, so a larger
    /// limit would limit nothing; and the bound keeps every sum, product and conversion made with
    /// a limit far from the edges of `Int64` and exact in a `Double` (2^40 < 2^53).
    package static let maximumBytesPerSecond: Int64 = 1 << 40

    /// `maximumBytesPerSecond` as a person reads it.
    package static let maximumDescription = "1099511627776 bytes per second (1 TiB/s)"
}
