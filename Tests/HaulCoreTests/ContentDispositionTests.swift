import Testing

@testable import HaulCore

@Suite("ContentDisposition")
struct ContentDispositionTests {
    @Test(
        "GIVEN common header shapes WHEN read THEN the suggested name is returned",
        arguments: [
            ("attachment; filename=report.pdf", "report.pdf"),
            ("attachment; filename=\"annual report.pdf\"", "annual report.pdf"),
            ("inline; FILENAME=\"a.txt\"", "a.txt"),
            ("filename=\"no-type.txt\"", "no-type.txt"),
            ("attachment;filename=tight.txt", "tight.txt"),
            ("  attachment ;  filename  =  \"spaced.txt\"  ", "spaced.txt"),
            ("attachment; size=10; foo=\"x;y\"; filename=last.txt", "last.txt"),
            ("attachment; filename=\"semi;colon.txt\"", "semi;colon.txt"),
            ("attachment; filename=\"quote\\\"inside.txt\"", "quote\"inside.txt"),
            ("attachment; filename=\"back\\\\slash.txt\"", "back\\slash.txt"),
            ("attachment; filename=\"\\a\\b.txt\"", "ab.txt"),
            ("attachment; filename=\"eq=uals.txt\"", "eq=uals.txt"),
            ("attachment; filename=\"raw-ü.txt\"", "raw-ü.txt"),
            ("attachment; filename=first.txt; filename=second.txt", "first.txt"),
        ])
    func plainFileName(header: String, expected: String) {
        #expect(ContentDisposition.fileName(fromHeader: header) == expected)
    }

    @Test(
        "GIVEN filename* in UTF-8 or ISO-8859-1 WHEN read THEN it is decoded",
        arguments: [
            ("attachment; filename*=UTF-8''%E2%82%AC%20rates.txt", "€ rates.txt"),
            ("attachment; filename*=utf-8'en'na%C3%AFve.txt", "naïve.txt"),
            ("attachment; filename*=ISO-8859-1''%A3%20rates.txt", "£ rates.txt"),
            ("attachment; filename*=iso-8859-1'de'%FC.txt", "ü.txt"),
            ("attachment; FileName*=UTF-8''plain.txt", "plain.txt"),
            ("attachment; filename*=\"UTF-8''quoted.txt\"", "quoted.txt"),
            ("attachment; filename*=UTF-8''%2e%2e%2fevil", "../evil"),
        ])
    func extendedFileName(header: String, expected: String) {
        #expect(ContentDisposition.fileName(fromHeader: header) == expected)
    }

    @Test("GIVEN both parameters in either order WHEN read THEN filename* wins")
    func extendedPreferred() {
        let forward = "attachment; filename=\"EURO rates.txt\"; filename*=utf-8''%e2%82%ac%20rates.txt"
        let backward = "attachment; filename*=utf-8''%e2%82%ac%20rates.txt; filename=\"EURO rates.txt\""
        #expect(ContentDisposition.fileName(fromHeader: forward) == "€ rates.txt")
        #expect(ContentDisposition.fileName(fromHeader: backward) == "€ rates.txt")
    }

    @Test(
        "GIVEN a broken or unsupported filename* WHEN read THEN filename is used instead",
        arguments: [
            "attachment; filename*=UTF-8''%zz.txt; filename=fallback.txt",
            "attachment; filename*=UTF-8''%E2.txt; filename=fallback.txt",
            "attachment; filename*=UTF-8''%4; filename=fallback.txt",
            "attachment; filename*=Shift_JIS''%82%A0; filename=fallback.txt",
            "attachment; filename*=UTF-8'no-second-quote; filename=fallback.txt",
            "attachment; filename*=plain.txt; filename=fallback.txt",
            "attachment; filename*=UTF-8''; filename=fallback.txt",
            "attachment; filename*=UTF-8''a b.txt; filename=fallback.txt",
            "attachment; filename*=UTF-8''caf\u{E9}.txt; filename=fallback.txt",
        ])
    func fallsBackToPlain(header: String) {
        #expect(ContentDisposition.fileName(fromHeader: header) == "fallback.txt")
    }

    @Test(
        "GIVEN no usable name WHEN read THEN the result is nil",
        arguments: [
            "", "   ", "attachment", "inline", "attachment; size=42", "attachment; filename=",
            "attachment; filename=\"\"", "attachment; filename=\"unterminated.txt",
            "attachment; filename=\"a.txt\"junk", "attachment; filename*=UTF-8''%zz",
            "attachment; filenames=a.txt", "attachment; xfilename=a.txt", ";;;;", "=", "\"",
        ])
    func noName(header: String) {
        #expect(ContentDisposition.fileName(fromHeader: header) == nil)
    }

    @Test("GIVEN a dangerous name WHEN read THEN it comes back raw, for FileNameSanitizer to judge")
    func notSanitized() {
        #expect(
            ContentDisposition.fileName(fromHeader: "attachment; filename=\"../../etc/passwd\"")
                == "../../etc/passwd")
        #expect(ContentDisposition.fileName(fromHeader: "attachment; filename*=UTF-8''a%00b") == "a\u{0}b")
    }

    @Test("GIVEN a very long header WHEN read THEN the long name is returned whole")
    func longHeader() {
        let name = String(repeating: "n", count: 50_000)
        let noise = String(repeating: "x=y; ", count: 2_000)
        #expect(ContentDisposition.fileName(fromHeader: "attachment; \(noise)filename=\(name)") == name)
    }
}
