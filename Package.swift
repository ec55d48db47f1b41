// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Haul",
    products: [
        .library(name: "Haul", targets: ["Haul"]),
        .executable(name: "haul", targets: ["HaulCLI"]),
    ],
    targets: [
        // libcurl, the transfer engine on Linux (URLSession there is ~4x slower than curl).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // SQLite, the durable store's database.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // OpenSSL's libcrypto: digests for --checksum.
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // civetweb: the embedded HTTP and WebSocket server of `haul serve`.
        .systemLibrary(
            name: "CCivetweb",
            providers: [.apt(["libcivetweb-dev"])]
        ),
        // The few system calls Swift's Glibc module does not expose (sync_file_range).
        .target(name: "CHaulSystem"),
        // Value types and pure decisions: no I/O.
        .target(name: "HaulCore"),
        // The transport protocol and its libcurl implementation.
        .target(name: "HaulEngine", dependencies: ["CCurl", "HaulCore"]),
        // Streaming digests whose state survives a checkpoint.
        .target(name: "HaulChecksum", dependencies: ["CCrypto", "HaulCore"]),
        // The durable resume record and its write ordering.
        .target(name: "HaulStore", dependencies: ["HaulCore", "CSQLite", "HaulChecksum", "CHaulSystem"]),
        // The public API: one download, its event stream, the wiring.
        .target(name: "Haul", dependencies: ["HaulCore", "HaulEngine", "HaulStore", "HaulChecksum", "CHaulSystem"]),
        // `haul serve`: aria2's JSON-RPC over HTTP and WebSocket, and the dashboard, on the queue.
        .target(
            name: "HaulServe",
            dependencies: ["Haul", "HaulCore", "HaulStore", "CCivetweb"],
            resources: [
                .embedInCode("Dashboard/index.html"), .embedInCode("Dashboard/dashboard.js"), .embedInCode("Dashboard/dashboard.css"),
            ]
        ),
        // The `haul` command line tool.
        .executableTarget(name: "HaulCLI", dependencies: ["Haul", "HaulCore", "HaulEngine", "HaulServe"]),
        // Loopback servers for tests: a fault-injecting HTTP server and an nginx launcher.
        .target(name: "HaulTestSupport", dependencies: ["HaulCore"]),
        .testTarget(name: "HaulCoreTests", dependencies: ["HaulCore"]),
        .testTarget(name: "HaulEngineTests", dependencies: ["HaulEngine", "HaulCore"]),
        .testTarget(name: "HaulStoreTests", dependencies: ["HaulStore", "HaulTestSupport", "HaulChecksum"]),
        .testTarget(name: "HaulTests", dependencies: ["Haul", "HaulEngine", "HaulStore", "HaulTestSupport"]),
        .testTarget(name: "HaulCLITests", dependencies: ["HaulTestSupport", "HaulCore", "HaulChecksum"]),
        .testTarget(name: "HaulServeTests", dependencies: ["HaulServe", "Haul", "HaulCore", "HaulTestSupport"]),
    ]
)
