import Foundation

/// The dashboard's files, compiled into the binary (no files to install, nothing fetched).
enum Dashboard {
    struct File {
        let type: String
        let body: Data
    }

    static func file(at path: String) -> File? {
        switch path {
        case "/", "/index.html": return File(type: "text/html; charset=utf-8", body: Data(PackageResources.index_html))
        case "/dashboard.js": return File(type: "text/javascript; charset=utf-8", body: Data(PackageResources.dashboard_js))
        case "/dashboard.css": return File(type: "text/css; charset=utf-8", body: Data(PackageResources.dashboard_css))
        default: return nil
        }
    }
}
