import Foundation

/// The certificate chain and private key an ``NginxServer`` serves HTTPS with.
package struct NginxTLS: Sendable, Equatable {
    /// A PEM file with the server certificate, optionally followed by intermediate certificates.
    package let certificatePath: String
    /// A PEM file with the server certificate's private key, unencrypted.
    package let keyPath: String

    /// Creates a TLS configuration from two PEM files; they are checked when the server starts.
    package init(certificatePath: String, keyPath: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }

    /// The same files by absolute path (nginx resolves relative ones against its prefix, not the
    /// test's working directory); throws when either is not a readable file.
    func absolute() throws -> NginxTLS {
        let paths = [certificatePath, keyPath].map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        for path in paths where !FileManager.default.isReadableFile(atPath: path) {
            throw TestSupportError("nginx TLS file \(path) does not exist or is not readable")
        }
        return NginxTLS(certificatePath: paths[0], keyPath: paths[1])
    }
}
