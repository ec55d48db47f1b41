import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// The generated nginx.conf: everything nginx writes stays inside the temporary directory.
extension NginxServer {
    /// A double-quoted nginx string; `$` is left alone because nginx would read it as a variable anyway.
    private static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            + "\""
    }

    static func configuration(
        directory: String, root: String, port: Int, limitRate: String?, disabledModules: Set<String>,
        tls: NginxTLS? = nil, redirects: [String: String] = [:], headers: [String: [String: String]] = [:]
    ) -> String {
        let rootSlash = root.hasSuffix("/") ? root : root + "/"
        let tempPaths = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
            .filter { $0 == "client_body" || !disabledModules.contains($0) }
            .map { "    \($0)_temp_path \(quoted(directory + "/" + $0));" }
            .joined(separator: "\n")
        let limited =
            limitRate.map {
                """

                        location /limited/ {
                            limit_rate \($0);
                            alias \(quoted(rootSlash));
                        }

                        location /oneconn/ {
                            limit_rate \($0);
                            limit_conn haul_one_connection 1;
                            limit_conn_status 503;
                            alias \(quoted(rootSlash));
                        }
                """
            } ?? ""
        let redirected = redirects.sorted { $0.key < $1.key }.map { path, location in
            "\n        location = \(path) {\n            return 302 \(quoted(location));\n        }"
        }.joined()
        let withHeaders = headers.sorted { $0.key < $1.key }.map { path, fields in
            let lines = fields.sorted { $0.key < $1.key }.map { "            add_header \($0.key) \(quoted($0.value)) always;" }
            return "\n        location = \(path) {\n" + lines.joined(separator: "\n") + "\n        }"
        }.joined()
        let listen: String
        if let tls {
            listen = """
                listen 127.0.0.1:\(port) ssl http2;
                        ssl_certificate \(quoted(tls.certificatePath));
                        ssl_certificate_key \(quoted(tls.keyPath));
                        ssl_protocols TLSv1.2 TLSv1.3;
                        ssl_session_cache off;
                """
        } else {
            listen = "listen 127.0.0.1:\(port);"
        }
        return """
            daemon off;
            master_process on;
            worker_processes 1;
            \(getuid() == 0 ? "user root;" : "")
            pid \(quoted(directory + "/nginx.pid"));
            lock_file \(quoted(directory + "/nginx.lock"));
            error_log \(quoted(directory + "/error.log")) notice;

            events {
                worker_connections 1024;
            }

            http {
                default_type application/octet-stream;
                log_format haul_test '$remote_addr $server_protocol $request_uri $status $body_bytes_sent $http_range';
                access_log \(quoted(directory + "/access.log")) haul_test;
                log_format haul_timing '$msec $request_time $request_uri';
                access_log \(quoted(directory + "/timing.log")) haul_timing;
                limit_conn_zone $binary_remote_addr zone=haul_one_connection:1m;
            \(tempPaths)
                sendfile on;
                tcp_nopush on;
                etag on;
                keepalive_timeout 65;

                server {
                    \(listen)
                    server_name localhost;
                    root \(quoted(root));
                    location / {
                    }\(limited)\(redirected)\(withHeaders)
                }
            }

            """
    }
}
