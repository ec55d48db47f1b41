import HaulCore
import Testing

/// Messages that name settings: each front end shows its own names, the library its properties.
@Suite("SettingText")
struct SettingTextTests {
    @Test func settingsAreNamedByWhoeverShowsTheMessage() {
        let size = 10
        let text: SettingText = "the file is over \(setting: .maxSize) (\(size) bytes); \(setting: .overwrite) replaces it"
        #expect(text.description == "the file is over maxSize (10 bytes); existingFile: .overwrite replaces it")
        #expect(text.rendered(SettingNames([.maxSize: "--max-size", .overwrite: "--force"])) == "the file is over --max-size (10 bytes); --force replaces it")
        #expect(text.settings == [.maxSize, .overwrite])
    }

    @Test func aSettingWithoutAFrontEndNameKeepsTheLibrarysName() {
        let text: SettingText = "use \(setting: .curlEngine)"
        #expect(text.rendered(SettingNames([.maxSize: "--max-size"])) == "use engine: .curl")
        #expect(text.rendered(.library) == text.description)
    }

    @Test func nestedTextKeepsItsSettingsAndPlainTextHasNone() {
        let inner: SettingText = "refused (\(setting: .allowsHTTPRedirect))"
        let outer: SettingText = "gave up: \(inner) at \("https://a.test")"
        #expect(outer.settings == [.allowsHTTPRedirect])
        #expect(outer.description == "gave up: refused (allowsHTTPRedirect) at https://a.test")
        #expect(SettingText("plain --force text").settings.isEmpty)
        #expect(SettingText("a") == "a")
    }

    @Test func redactionTouchesTheTextAndNeverTheSettings() {
        let text: SettingText = "secret s3cr3t via \(setting: .proxy) s3cr3t"
        let hidden = text.mappingText { $0.replacingOccurrences(of: "s3cr3t", with: "***") }
        #expect(hidden.description == "secret *** via transfer.proxy ***")
        #expect(hidden.settings == [.proxy])
    }

    @Test func everySettingHasAStableIdentifierOfItsOwn() {
        let ids = DownloadSetting.all.map(\.id)
        #expect(Set(ids).count == ids.count)
        #expect(!DownloadSetting.all.contains { $0.name.hasPrefix("-") })
    }
}
