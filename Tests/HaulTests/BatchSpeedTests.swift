import Foundation
import Testing

@testable import Haul

/// A batch's speed is measured over the bytes its downloads moved, not summed from theirs.
@Suite("BatchSpeed: a batch's own speed")
struct BatchSpeedTests {
    @Test func downloadsShorterThanASecondStillGiveTheBatchASpeed() {
        // GIVEN a batch of 100 KB downloads, two at a time, each over in a quarter of a second
        var speed = BatchSpeed()
        var next: Int64 = 0
        var now = 0.0
        speed.sample(at: now)
        for _ in 0..<4 {
            let pair = [next, next + 1]
            next += 2
            for id in pair { speed.started(id, from: 0) }
            for step in 1...5 {
                now += 0.05
                for id in pair { speed.reported(id, bytes: Int64(step) * 20_000) }
                speed.sample(at: now)
            }
            for id in pair { speed.ended(id) }
        }
        // THEN after a second the batch moves 800 KB a second, though none of its downloads had a speed
        #expect(abs(speed.bytesPerSecond - 800_000) < 1, "\(speed.bytesPerSecond)")
    }

    @Test func bytesResumedFromOrGivenUpAreNotMoved() {
        // GIVEN a download resuming from 5 MB, and one that restarts from 0 after 300 KB
        var speed = BatchSpeed()
        speed.sample(at: 0)
        speed.started(1, from: 5_000_000)
        speed.started(2, from: 0)
        speed.reported(1, bytes: 5_100_000)
        speed.reported(2, bytes: 300_000)
        speed.sample(at: 0.5)
        speed.reported(2, bytes: 0)
        speed.reported(2, bytes: 100_000)
        speed.reported(1, bytes: 5_200_000)
        speed.sample(at: 1.0)
        // THEN only what arrived counts: 100 + 300 + 100 + 100 KB in a second
        #expect(speed.bytesPerSecond == 600_000)
    }

    @Test func noSpeedBeforeASecond() {
        var speed = BatchSpeed()
        speed.sample(at: 0)
        speed.started(1, from: 0)
        speed.reported(1, bytes: 1_000_000)
        speed.sample(at: 0.5)
        #expect(speed.bytesPerSecond == 0)
    }
}
