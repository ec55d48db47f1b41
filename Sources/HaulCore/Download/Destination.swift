/// Where a download's bytes end up.
public enum Destination: Sendable, Equatable {
    /// This path. If it is not a regular file (`/dev/null`, a FIFO), it is written to directly.
    case file(String)
    /// A file inside this directory, named from the response (`Content-Disposition`, else the URL).
    case directory(String)
    /// Standard output.
    case standardOutput
}

/// What to do about a complete file already at the destination. The queue stores it as its raw
/// value.
public enum ExistingFilePolicy: String, Sendable, Equatable {
    /// Stop with `destinationExists`; nothing is touched. A file that is this same request's
    /// finished download (its mark proves it, see `DownloadCompletion.alreadyComplete`) is not in
    /// the way: the download completes at once, without a request (into a directory under a name
    /// the server gives, once the response head named it).
    case refuse
    /// Download anew and replace it once the new file is complete.
    case overwrite
    /// Treat it as the beginning of the download (wget -c): verify its bytes against the server, then append.
    case continueIt = "continue"
}
