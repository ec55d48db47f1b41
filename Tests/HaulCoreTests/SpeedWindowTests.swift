import HaulCore
import Testing

/// A speed is measured over a window long enough to mean something; until then there is none
/// (issue 36, item 2).
@Suite("The speed window")
struct SpeedWindowTests {
    @Test func aBurstInTheFirstMillisecondsShowsNoSpeed() {
        // GIVEN a body that starts with 300 KB waiting in the socket, then 1 MB/s
        var meter = ProgressMeter()
        meter.record(bytes: 0, at: 0.25)
        meter.record(bytes: 300_000, at: 0.251)

        // THEN no speed is shown over a millisecond (it was 300 MB/s), nor over half a second
        #expect(meter.bytesPerSecond == 0)
        meter.record(bytes: 800_000, at: 0.75)
        #expect(meter.bytesPerSecond == 0)
        #expect(meter.secondsLeft(remaining: 1_000_000) == nil)

        // WHEN the samples span a second
        meter.record(bytes: 1_300_000, at: 1.25)

        // THEN the speed is what came over that second, burst included: about 1.3 MB/s, not 300 MB/s
        #expect(meter.bytesPerSecond == 1_300_000)
    }

    @Test func theWholeRunsSpeedIsShownEvenIfShorterThanTheWindow() {
        // GIVEN a download of 3 MB that took a tenth of a second
        var meter = ProgressMeter()
        meter.record(bytes: 0, at: 0)
        meter.record(bytes: 3_000_000, at: 0.1)

        // THEN while it runs no speed is shown, but its end reports the whole run's
        #expect(meter.bytesPerSecond == 0)
        #expect(meter.bytesPerSecond(final: true) == 30_000_000)
    }
}
