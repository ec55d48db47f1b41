import Foundation
import Synchronization
import Testing

@testable import Haul

@Suite("The figures' ticker: one clock for every connection's reports")
struct FiguresTickerTests {
    @Test
    func aRegisteredLookIsCalledAtEveryTickAndNeverOnceStopped() async throws {
        let ticker = FiguresTicker()
        let looks = Mutex(0)
        // GIVEN a look registered
        let registration = ticker.register { looks.withLock { $0 += 1 } }
        // WHEN half a second passes
        try await Task.sleep(for: .seconds(0.5))
        // THEN it was looked at about every tick (10 ticks; a busy machine may skip some)
        let seen = looks.withLock { $0 }
        #expect((3...11).contains(seen), "\(seen) looks in 0.5 s")
        // AND once stopped, it is never looked at again
        registration.stop()
        let atStop = looks.withLock { $0 }
        try await Task.sleep(for: .seconds(0.2))
        #expect(looks.withLock { $0 } == atStop)
        #expect(ticker.registeredCount == 0)
    }

    @Test
    func stopWaitsForALookUnderWay() async throws {
        let ticker = FiguresTicker()
        let inside = Mutex((entered: false, left: false))
        // GIVEN a look that takes 200 ms
        let registration = ticker.register {
            inside.withLock { $0.entered = true }
            Thread.sleep(forTimeInterval: 0.2)
            inside.withLock { $0.left = true }
        }
        while !inside.withLock({ $0.entered }) { try await Task.sleep(for: .milliseconds(5)) }
        // WHEN it is stopped while the look runs
        registration.stop()
        // THEN the look had ended by the time stop returned
        #expect(inside.withLock { $0.left })
    }

    @Test
    func theTickerStartsAgainAfterItHadNothingToDo() async throws {
        let ticker = FiguresTicker()
        // GIVEN a ticker whose only look was stopped, and which then ended its task
        ticker.register {}.stop()
        try await Task.sleep(for: .seconds(0.2))
        // WHEN another look is registered
        let looks = Mutex(0)
        let registration = ticker.register { looks.withLock { $0 += 1 } }
        defer { registration.stop() }
        try await Task.sleep(for: .seconds(0.3))
        // THEN it is looked at
        #expect(looks.withLock { $0 } >= 2)
    }

    @Test(
        """
        GIVEN eight tasks each registering and stopping a look 60 times, waiting 0 to 2 ticks in between (the ticker \
        drained to nothing and started again many times, stops landing in the middle of looks) \
        THEN no look runs after its stop returned, nothing stays registered, and a new look is still looked at
        """,
        .timeLimit(.minutes(1)))
    func registrationsComingAndGoingByTheHundredLeaveNothingBehind() async throws {
        let ticker = FiguresTicker()
        let lateLooks = LookCount()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<60 {
                        let stopped = LookCount.Flag()
                        let registration = ticker.register {
                            if stopped.value.withLock({ $0 }) { lateLooks.count.withLock { $0 += 1 } }
                            if (task + round) % 5 == 0 { Thread.sleep(forTimeInterval: 0.002) }
                        }
                        let wait = (task * 7 + round) % 3
                        if wait > 0 { try? await Task.sleep(for: .seconds(FiguresTicker.tick * Double(wait))) }
                        registration.stop()
                        stopped.value.withLock { $0 = true }
                    }
                }
            }
        }
        try await Task.sleep(for: .seconds(0.2))
        #expect(lateLooks.count.withLock { $0 } == 0)
        #expect(ticker.registeredCount == 0)
        let looks = Mutex(0)
        let registration = ticker.register { looks.withLock { $0 += 1 } }
        defer { registration.stop() }
        try await Task.sleep(for: .seconds(0.3))
        #expect(looks.withLock { $0 } >= 2)
    }
}

/// Looks counted across tasks.
private final class LookCount: Sendable {
    let count = Mutex(0)

    /// A flag shared by a look and its task.
    final class Flag: Sendable {
        let value = Mutex(false)
    }
}
