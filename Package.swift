// swift-tools-version:6.0
import PackageDescription

// Linux is built and tested; Apple platforms are supported by design (see "Platforms" in the
// README). libcurl and libcrypto are linked on Linux only: on Apple platforms URLSession moves the
// bytes and CommonCrypto computes the digests.
let linux: [Platform] = [.linux]
let apple: [Platform] = [.macOS, .iOS, .tvOS, .watchOS, .visionOS]

let package = Package(
    name: "Haul",
    products: [
        .library(name: "Haul", targets: ["Haul"]),
        .executable(name: "haul", targets: ["HaulCLI"]),
    ],
    targets: [
        // libcurl, the transfer engine on Linux (URLSession there is ~4x slower than curl); not
        // linked on Apple platforms (HaulEngine's dependency on it is Linux-only).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // SQLite, the durable store's database; every platform (Apple platforms ship it in the SDK).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // libpq, PostgreSQL's client library: the queue store a fleet of machines shares.
        .systemLibrary(
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // OpenSSL's libcrypto: digests for --checksum, on Linux only (CommonCrypto on Apple platforms).
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The platform calls Swift cannot make directly (sync_file_range, fallocate, renameat2 on
        // Linux; F_PREALLOCATE, renamex_np and CommonCrypto's digests on Apple platforms).
        .target(name: "CHaulSystem"),
        // Value types and pure decisions: no I/O.
        .target(name: "HaulCore"),
        // JSON, the one reader and writer of it (bounded, fuzzed), and `Codable` types to and from
        // it: the resume record, a queued download's options, the JSON-RPC server, `--json`.
        .target(name: "HaulJSON"),
        // The transport protocol and its engines: libcurl (Linux only) and URLSession.
        .target(name: "HaulEngine", dependencies: [.target(name: "CCurl", condition: .when(platforms: linux)), "HaulCore"]),
        // Streaming digests whose state survives a checkpoint.
        .target(
            name: "HaulChecksum",
            dependencies: [
                .target(name: "CCrypto", condition: .when(platforms: linux)), .target(name: "CHaulSystem", condition: .when(platforms: apple)),
                "HaulCore",
            ]
        ),
        // The durable resume record and its write ordering.
        .target(name: "HaulStore", dependencies: ["HaulCore", "HaulJSON", "CSQLite", "CPostgres", "HaulChecksum", "CHaulSystem"]),
        // The public API: one download, its event stream, the wiring.
        .target(name: "Haul", dependencies: ["HaulCore", "HaulEngine", "HaulStore", "HaulChecksum", "CHaulSystem"]),
        // The JSON-RPC envelope (tokens, batches, parameters) over HaulJSON's values: pure, fuzzed.
        .target(name: "HaulRPC", dependencies: ["HaulJSON"]),
        // `haul serve`: aria2's JSON-RPC over HTTP and WebSocket, and the dashboard, on the queue.
        .target(
            name: "HaulServe",
            dependencies: ["Haul", "HaulCore", "HaulRPC", "HaulChecksum", "HaulStore", "CHaulSystem"],
            resources: [
                .embedInCode("Dashboard/index.html"), .embedInCode("Dashboard/dashboard.js"), .embedInCode("Dashboard/dashboard.css"),
            ]
        ),
        // The command line's text: the `-i FILE` download list and the escaping of untrusted text
        // for a terminal. A library of its own so that its tests can import it (and a fuzz target
        // compile it); only HaulCLI uses it.
        .target(name: "HaulCLIText", dependencies: ["HaulCore"]),
        // The `haul` command line tool.
        .executableTarget(name: "HaulCLI", dependencies: ["Haul", "HaulCore", "HaulEngine", "HaulJSON", "HaulServe", "HaulCLIText"]),
        // Loopback servers for tests: a fault-injecting HTTP server and an nginx launcher.
        .target(name: "HaulTestSupport", dependencies: ["HaulCore"]),
        .testTarget(name: "HaulCoreTests", dependencies: ["HaulCore", "HaulTestSupport"]),
        .testTarget(name: "HaulEngineTests", dependencies: ["HaulEngine", "HaulCore"]),
        .testTarget(name: "HaulStoreTests", dependencies: ["HaulStore", "HaulJSON", "HaulTestSupport", "HaulChecksum"]),
        .testTarget(name: "HaulTests", dependencies: ["Haul", "HaulEngine", "HaulStore", "HaulTestSupport"]),
        .testTarget(name: "HaulCLITests", dependencies: ["HaulTestSupport", "HaulCore", "HaulChecksum"]),
        .testTarget(name: "HaulCLITextTests", dependencies: ["HaulCLIText"]),
        .testTarget(name: "HaulJSONTests", dependencies: ["HaulJSON", "HaulTestSupport"]),
        .testTarget(name: "HaulRPCTests", dependencies: ["HaulRPC"]),
        .testTarget(name: "HaulServeTests", dependencies: ["HaulServe", "HaulRPC", "Haul", "HaulCore", "HaulStore", "HaulTestSupport"]),
    ]
)
