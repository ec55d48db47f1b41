import Foundation

/// Throwaway X.509 material for HTTPS tests: a private CA and a server certificate for the loopback
/// address, made by `/usr/bin/openssl`.
///
/// Nothing is trusted system-wide: a client accepts the server only when told to trust the CA file
/// (`haul --cacert`, `CURLOPT_CAINFO`), which is what lets a test check both the refusal and the success.
package enum TestCertificates {
    /// The openssl binary; Debian's `openssl` package puts it here.
    static let openssl = "/usr/bin/openssl"
    /// How long the certificates are valid, from now. Short, because they only live for a test run.
    static let validDays = 3

    /// Creates, in `directory`, a CA (`ca.pem`, `ca.key`) and a server certificate signed by it
    /// (`server.pem`, `server.key`) for `127.0.0.1`, with subjectAltName `IP:127.0.0.1` and `DNS:localhost`,
    /// valid for a few days. Keys are unencrypted P-256 keys.
    ///
    /// Every file openssl reads or writes (including its config, so no system `openssl.cnf` or `~/.rnd`
    /// is involved) is inside `directory`, which must exist.
    /// - Returns: absolute paths of the CA certificate, the server certificate and the server's private key,
    ///   ready for ``NginxTLS`` and `--cacert`.
    /// - Throws: ``TestSupportError`` when openssl is missing or a step fails; the message has its stderr.
    package static func make(in directory: String) throws -> (caCert: String, serverCert: String, serverKey: String) {
        let directory = URL(fileURLWithPath: directory).standardizedFileURL.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw TestSupportError("certificate directory \(directory) does not exist or is not a directory")
        }
        guard FileManager.default.isExecutableFile(atPath: openssl) else {
            throw TestSupportError("\(openssl) is not installed; install it with `apt-get install openssl`")
        }
        func file(_ name: String) -> String { directory + "/" + name }

        let config = file("openssl.cnf")
        try configuration.write(toFile: config, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["OPENSSL_CONF"] = config
        environment["RANDFILE"] = file(".rnd")

        func run(_ arguments: [String]) throws {
            let result = try ProcessRunner.run(openssl, arguments, environment: environment, timeout: 60)
            guard result.status == 0 else {
                throw TestSupportError(
                    "openssl \(arguments.joined(separator: " ")) failed with status \(result.status): \(result.stderr)")
            }
        }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

        // A self-signed CA.
        try run(
            ["req", "-config", config, "-x509"] + curve + [
                "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", String(validDays),
                "-subj", "/O=Haul tests/CN=Haul Test CA", "-extensions", "haul_ca",
            ])
        // A server key and request, then the CA's signature with the server extensions.
        try run(
            ["req", "-config", config, "-new"] + curve + [
                "-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/O=Haul tests/CN=127.0.0.1",
            ])
        try run([
            "x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
            "-set_serial", "0x" + randomSerial(), "-days", String(validDays), "-sha256",
            "-extfile", config, "-extensions", "haul_server", "-out", file("server.pem"),
        ])
        try? FileManager.default.removeItem(atPath: file("server.csr"))
        return (caCert: file("ca.pem"), serverCert: file("server.pem"), serverKey: file("server.key"))
    }

    /// 64 random bits in hex: distinct serials, so a client never confuses two runs' certificates.
    private static func randomSerial() -> String {
        let value = UInt64.random(in: 1...UInt64.max) >> 1
        return String(value, radix: 16)
    }

    /// A complete openssl config, so the system one (and anything it loads) plays no part.
    static let configuration = """
        [ req ]
        distinguished_name = haul_dn
        prompt = no

        [ haul_dn ]
        CN = unused

        [ haul_ca ]
        basicConstraints = critical, CA:TRUE, pathlen:0
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always

        [ haul_server ]
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = IP:127.0.0.1, DNS:localhost
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid, issuer

        """
}
