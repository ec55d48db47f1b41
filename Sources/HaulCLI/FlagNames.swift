import Haul
import HaulCore

extension SettingNames {
    /// The `haul` command's flags for the settings the library's messages name: the option whose
    /// spec sets a setting (`OptionSpec.setting`), and these, which are named otherwise.
    static let flags = SettingNames(
        [.continueExisting: "-c", .curlEngine: "--engine curl", .directoryDestination: "-d"].merging(
            (ItemOptions.specs + RunSettings.specs).compactMap { spec in spec.setting.map { ($0, "--\(spec.long)") } },
            uniquingKeysWith: { named, _ in named }))
}

extension DownloadError {
    /// The message as the command shows it: settings named by their flags.
    var shown: String { message(naming: .flags) }
}
