import HaulCore
import HaulStore
import Testing

/// What opening an output does with what an earlier run left, as a table (no file system).
@Suite("OpenDecision: the prepare table")
struct OpenDecisionTests {
    typealias Loaded = OpenDecision.Loaded
    static let ours = Loaded(matchesRequest: true, isAdopted: false, isFinished: false, replacesExistingFile: false)
    static let finished = Loaded(matchesRequest: true, isAdopted: false, isFinished: true, replacesExistingFile: false)
    static let adopted = Loaded(matchesRequest: true, isAdopted: true, isFinished: false, replacesExistingFile: false)
    static let other = Loaded(matchesRequest: false, isAdopted: false, isFinished: false, replacesExistingFile: false)
    static let beside = Loaded(matchesRequest: true, isAdopted: false, isFinished: false, replacesExistingFile: true)
    static let markedNotRenamed = Loaded(matchesRequest: true, isAdopted: false, isFinished: true, replacesExistingFile: false, partialIsFinishedFile: true)

    struct Row: Sendable, CustomStringConvertible {
        let loaded: Loaded?
        let partial: Bool
        let inPlace: Bool
        let final: PathKind?
        let policy: ExistingFilePolicy
        var proven = false
        let decision: OpenDecision
        let forgets: Bool
        let why: String
        var description: String { why }
    }

    static let rows: [Row] = [
        Row(loaded: nil, partial: false, inPlace: false, final: .missing, policy: .refuse, decision: .startFresh, forgets: true, why: "nothing there"),
        Row(
            loaded: nil, partial: true, inPlace: false, final: .missing, policy: .refuse, decision: .startFresh, forgets: true,
            why: "bytes without a record are not trusted"),
        Row(
            loaded: ours, partial: true, inPlace: false, final: .missing, policy: .refuse, decision: .continuePartial, forgets: false,
            why: "our partial and record"),
        Row(
            loaded: ours, partial: false, inPlace: false, final: .missing, policy: .refuse, decision: .startFresh, forgets: true,
            why: "the partial was removed by hand"),
        Row(
            loaded: other, partial: true, inPlace: false, final: .missing, policy: .refuse, decision: .startFresh, forgets: true, why: "another method or range"
        ),
        Row(
            loaded: adopted, partial: false, inPlace: false, final: .regular, policy: .continueIt, decision: .adoptExistingFile, forgets: true,
            why: "an adoption already put back is adopted again"),
        Row(
            loaded: finished, partial: false, inPlace: true, final: .regular, policy: .refuse, decision: .useFinishedFile, forgets: false,
            why: "the finished file is still in place"),
        Row(
            loaded: finished, partial: false, inPlace: false, final: .regular, policy: .refuse, decision: .refuse(.exists), forgets: true,
            why: "a finished file changed since is someone else's"),
        Row(
            loaded: finished, partial: false, inPlace: false, final: .regular, policy: .overwrite, decision: .startFresh, forgets: true,
            why: "overwrite asks for a new one"),
        Row(
            loaded: markedNotRenamed, partial: true, inPlace: false, final: .missing, policy: .refuse, decision: .continuePartial, forgets: false,
            why: "killed between the finished mark and the rename: the complete partial is continued"),
        Row(
            loaded: finished, partial: true, inPlace: false, final: .missing, policy: .refuse, decision: .startFresh, forgets: true,
            why: "a finished record whose partial is not the file it marked vouches for nothing"),
        Row(
            loaded: markedNotRenamed, partial: true, inPlace: false, final: .regular, policy: .refuse, decision: .refuse(.exists), forgets: false,
            why: "a file appeared where the marked partial was to go"),
        Row(loaded: nil, partial: false, inPlace: false, final: .regular, policy: .refuse, decision: .refuse(.exists), forgets: true, why: "a file is there"),
        Row(
            loaded: ours, partial: true, inPlace: false, final: .symlink, policy: .overwrite, decision: .refuse(.symlink), forgets: false,
            why: "never through a symlink"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: .regular, policy: .overwrite, decision: .startFresh, forgets: true,
            why: "replaced once complete"),
        Row(
            loaded: ours, partial: true, inPlace: false, final: .regular, policy: .overwrite, decision: .continuePartial, forgets: false,
            why: "a replacement already under way"),
        Row(loaded: nil, partial: false, inPlace: false, final: .regular, policy: .continueIt, decision: .adoptExistingFile, forgets: true, why: "wget -c"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: .directory, policy: .continueIt, decision: .refuse(.notRegular), forgets: true,
            why: "only a regular file is continued"),
        Row(
            loaded: ours, partial: true, inPlace: false, final: .regular, policy: .continueIt, decision: .refuse(.fileAndPartialBoth), forgets: false,
            why: "two candidates"),
        Row(
            loaded: beside, partial: true, inPlace: false, final: .regular, policy: .continueIt, decision: .continuePartial, forgets: false,
            why: "a new download beside a file that did not match"),
        Row(
            loaded: ours, partial: true, inPlace: false, final: nil, policy: .refuse, decision: .continuePartial, forgets: false,
            why: "a directory download: no name yet"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: .regular, policy: .refuse, proven: true, decision: .useFinishedFile, forgets: true,
            why: "run again after completion: the file's mark proves it this request's finished download"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: .regular, policy: .continueIt, proven: true, decision: .useFinishedFile, forgets: true,
            why: "nothing to continue in a proven finished file"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: .regular, policy: .overwrite, proven: true, decision: .startFresh, forgets: true,
            why: "overwrite asks for a new one even of a proven file"),
        Row(
            loaded: ours, partial: true, inPlace: false, final: .regular, policy: .refuse, proven: true, decision: .refuse(.exists), forgets: false,
            why: "a partial under way beside a proven file is not given up"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: .symlink, policy: .refuse, proven: true, decision: .refuse(.symlink), forgets: true,
            why: "never through a symlink"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: nil, policy: .refuse, proven: true, decision: .useFinishedFile, forgets: true,
            why: "a directory download run again: the file its URL names is proven this request's finished download"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: nil, policy: .refuse, decision: .startFresh, forgets: true,
            why: "a directory download: whatever is at the URL's name is not proven, and the response may name another file"),
        Row(
            loaded: ours, partial: true, inPlace: false, final: nil, policy: .refuse, proven: true, decision: .continuePartial, forgets: false,
            why: "a directory download under way is continued, not taken for the proven file"),
        Row(
            loaded: nil, partial: false, inPlace: false, final: nil, policy: .overwrite, proven: true, decision: .startFresh, forgets: true,
            why: "overwrite asks for a new one into a directory too"),
    ]

    @Test(arguments: rows)
    func theTable(row: Row) {
        let (decision, forgets) = OpenDecision.decide(
            loaded: row.loaded, partialExists: row.partial, finishedFileInPlace: row.inPlace, final: row.final, policy: row.policy,
            finalIsProvenFinished: row.proven)
        #expect(decision == row.decision, "\(row.why)")
        #expect(forgets == row.forgets, "\(row.why)")
    }
}
