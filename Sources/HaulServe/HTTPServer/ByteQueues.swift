import Foundation

/// The bytes received on a connection and not yet used. Consuming is O(1); the storage is
/// compacted once the used part is the larger one.
struct InputBuffer {
    private var storage: [UInt8] = []
    private var start = 0

    var count: Int { storage.count - start }
    var isEmpty: Bool { count == 0 }
    var readable: ArraySlice<UInt8> { storage[start...] }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        storage.append(contentsOf: bytes)
    }

    /// Drops the first `count` unused bytes.
    mutating func consume(_ count: Int) {
        start += min(count, self.count)
        if start == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 1 << 16)
            start = 0
        } else if start >= 1 << 16, start * 2 >= storage.count {
            storage.removeFirst(start)
            start = 0
        }
    }

    /// The first `count` unused bytes, consumed.
    mutating func take(_ count: Int) -> Data {
        let taken = Data(storage[start..<(start + min(count, self.count))])
        consume(count)
        return taken
    }
}

/// What is still to be sent on a connection, message by message, so that a backlog can be
/// judged in messages as well as bytes.
struct OutputQueue {
    private var chunks: [Data] = []
    /// The index of the first chunk not wholly sent, and how much of it was.
    private var first = 0
    private var sentOfFirst = 0
    /// Unsent bytes.
    private(set) var bytes = 0

    /// Unsent messages (a partly sent one counts).
    var messages: Int { chunks.count - first }
    var isEmpty: Bool { bytes == 0 }

    mutating func append(_ message: Data) {
        guard !message.isEmpty else { return }
        chunks.append(message)
        bytes += message.count
    }

    /// What one attempt to send came to.
    enum Flush: Equatable {
        /// `sent` bytes went out (maybe 0: the socket is full); `bytes` tells what is left.
        case sent(Int)
        case failed
    }

    /// Sends with `send` (bytes in, bytes taken out: 0 when the socket is full, negative on an
    /// error) until everything is sent or the socket takes no more.
    mutating func flush(_ send: (UnsafeRawBufferPointer) -> Int) -> Flush {
        var total = 0
        while first < chunks.count {
            let chunk = chunks[first]
            let sent = chunk.withUnsafeBytes { raw in send(UnsafeRawBufferPointer(rebasing: raw[sentOfFirst...])) }
            if sent < 0 { return .failed }
            if sent == 0 { break }
            total += sent
            bytes -= sent
            sentOfFirst += sent
            if sentOfFirst == chunk.count {
                first += 1
                sentOfFirst = 0
            }
        }
        if first == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            first = 0
        } else if first >= 64, first * 2 >= chunks.count {
            chunks.removeFirst(first)
            first = 0
        }
        return .sent(total)
    }
}
