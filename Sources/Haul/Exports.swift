// The library's surface is one module: `import Haul` is all a user writes. Haul's public API is
// built from HaulCore's values (requests and their options, ranges, validators, checksums,
// headers, states) and HaulEngine's engine choice, so both are re-exported whole (the transport
// seam itself is `package`: an app chooses an engine, it never implements one). Only what the
// API uses is public in them; the rest is `package`, Haul's own (scripts/api-count.sh counts the
// surface). The DocC catalog documents them all as the one module
// `Haul` (scripts/docs.sh).
@_exported import HaulCore
@_exported import HaulEngine
