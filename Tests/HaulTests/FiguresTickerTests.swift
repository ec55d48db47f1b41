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
}
