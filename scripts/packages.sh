# The Debian packages the project needs, in one place: .ci/run, scripts/test.sh and scripts/demo.sh
# source this file and pass the lists to install_missing (scripts/install.sh). Only data: no
# commands run when it is sourced.

# To build haul and its tests: the system libraries of Package.swift's systemLibrary targets.
build_packages=(
    libcurl4-openssl-dev # CCurl: libcurl, the transfer engine on Linux
    libsqlite3-dev       # CSQLite: SQLite, the durable store's database
    libssl-dev           # CCrypto: OpenSSL's libcrypto, the digests for --checksum
    libpq-dev            # CPostgres: libpq, the client of the queue store a fleet shares (--state postgresql://)
    pkg-config           # how SwiftPM finds libcurl, sqlite3, libcrypto and libpq
)

# To run the tests (swift test), on top of build_packages.
test_packages=(
    nginx-light     # the loopback tests' HTTP server (each test starts its own on a free port)
    curl            # the loopback tests' raw HTTP requests (/usr/bin/curl)
    coreutils       # sha256sum, the loopback tests' checksums
    ca-certificates # HTTPS
    openssl         # the openssl command: the tests' throwaway CA
    python3         # a second SQLite writer in the store's locking test; the proxy tests' TLS front
    python3-venv    # scripts/test-venv.sh: aria2p (a real aria2 JSON-RPC client), websocket-client
    chromium        # the dashboard's headless browser test
    microsocks      # the real SOCKS5 proxy the proxy tests start on loopback
    tinyproxy       # the real HTTP proxy the proxy tests start on loopback
    postgresql      # the fleet tests' private PostgreSQL cluster (initdb, pg_ctl, psql: PostgresCluster)
    sqlite3         # the sqlite3 command: a second process reading or locking a store in the attack tests
)

# To run the main job (scripts/demo.sh), on top of build_packages.
demo_packages=(
    nginx-light # the private nginx on loopback the demo downloads from
    coreutils   # sha256sum, the demo's check
)
