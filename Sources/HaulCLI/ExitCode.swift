import Haul

/// The `haul` command's exit codes; documented in the README and `--help`.
enum ExitCode: Int32 {
    case success = 0
    case failure = 1
    case usage = 2
    case network = 3
    case httpStatus = 4
    case cannotResume = 5
    case io = 6
    case destinationExists = 7
    case checksumMismatch = 8
    case protocolViolation = 9
    case tooLarge = 10
    case engine = 11
    case secretRefused = 12
    case interrupted = 130
    case terminated = 143

    init(_ error: DownloadError) {
        switch error.category {
        case .usage: self = .usage
        case .network: self = .network
        case .httpStatus: self = .httpStatus
        case .cannotResume: self = .cannotResume
        case .io: self = .io
        case .destinationExists: self = .destinationExists
        case .protocolViolation: self = .protocolViolation
        case .checksum: self = .checksumMismatch
        case .tooLarge: self = .tooLarge
        case .engine: self = .engine
        case .secretRefused: self = .secretRefused
        default: self = .failure
        }
    }

    static let table = """
        Exit codes:
          0    the file is complete and in place
          1    unexpected failure
          2    usage: bad option, bad URL, bad value
          3    network: resolution, connection, timeout or dropped transfer (after retries);
               a proxy that cannot be reached or refuses the login
          4    the server answered with an HTTP error status (4xx/5xx)
          5    the bytes on disk cannot be continued safely (they are kept)
          6    disk or I/O error, e.g. the disk is full (downloaded bytes are kept)
          7    the destination already exists (use --force or -c); not for this request's own
               finished file, which is already complete (0)
          8    the file's checksum is not the expected one (the data is set aside as NAME.haul-rejected;
               the next run downloads the file anew)
          9    the server broke the protocol (bad redirect, more bytes than announced,
               a redirect from https to http without --allow-http-redirect)
          10   the file is larger than --max-size (bytes received are kept)
          11   the engine cannot do what the download asks (a queued item's --cacert
               or --proxy on --engine urlsession, a libcurl too old); bytes are kept
          12   a shared queue (--state postgresql://...) refused a secret (a header, a body, a
               password): give credentials by reference (--netrc-file, --cookies, the environment)
          130  interrupted by SIGINT; 143 by SIGTERM (the next run resumes)
        """
}
