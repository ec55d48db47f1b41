import Testing

@testable import HaulCore

/// `--continue` of a file longer than the server's: it cannot be a prefix of the server's file,
/// whatever the server answers, so it is left as it is (only `--force` replaces it).
@Suite("ResponseVerdict: an adopted file longer than the server's")
struct AdoptedLongerFileTests {
    /// What `--continue` of a 200,000-byte file asks for.
    func adoptedPlan() -> RequestPlan {
        let partial = LocalPartial(bytesOnDisk: 200_000, isAdopted: true)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            fatalError("test setup: expected a request plan")
        }
        return plan
    }

    func verdict(_ status: Int, _ pairs: [(String, String)]) -> ResponseVerdict {
        ResponseVerdict.evaluate(ResponseHead(status: status, headers: HTTPHeaders(pairs)), for: adoptedPlan())
    }

    func isLeftAlone(_ verdict: ResponseVerdict) -> Bool {
        guard case .fail(.cannotResume(let message)) = verdict else { return false }
        // Replacing it is the caller's setting, named as one (the command line calls it --force).
        return message.description.contains("200000") && message.description.contains("195904") && message.settings == [.overwrite]
    }

    @Test func everyAnswerThatShowsAShorterFileLeavesItAlone() {
        // 200: the whole (shorter) file
        #expect(isLeftAlone(verdict(200, [("Content-Length", "195904")])))
        // 206: the tail of the overlap window that still exists
        let overlapStart = 200_000 - 65_536
        #expect(isLeftAlone(verdict(206, [("Content-Range", "bytes \(overlapStart)-195903/195904"), ("Content-Length", "\(195_904 - overlapStart)")])))
        // 416: the window lies past the server's end
        #expect(isLeftAlone(verdict(416, [("Content-Range", "bytes */195904")])))
    }

    @Test func aServerFileAtLeastAsLongIsStillComparedAndContinued() {
        guard case .write = verdict(200, [("Content-Length", "200000")]) else {
            Issue.record("an equally long file must be compared as it streams")
            return
        }
        guard case .write = verdict(206, [("Content-Range", "bytes 134464-299999/300000"), ("Content-Length", "165536")]) else {
            Issue.record("a longer file must be continued after the overlap")
            return
        }
    }
}
