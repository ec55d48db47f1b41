#if canImport(CCurl)
    import CCurl

    /// A libcurl option together with its name.
    ///
    /// The name travels with the id because the one case that most needs it, a libcurl too old to
    /// know the option, is exactly the case where libcurl cannot name it itself.
    struct CurlOption: Sendable, Equatable, CustomStringConvertible {
        let id: CURLoption
        let name: String

        init(_ id: CURLoption, _ name: String) {
            self.id = id
            self.name = name
        }

        var description: String { name }
    }

    extension CurlOption {
        static let errorBuffer = CurlOption(CURLOPT_ERRORBUFFER, "CURLOPT_ERRORBUFFER")
        static let url = CurlOption(CURLOPT_URL, "CURLOPT_URL")
        static let protocols = CurlOption(CURLOPT_PROTOCOLS_STR, "CURLOPT_PROTOCOLS_STR")
        static let noSignal = CurlOption(CURLOPT_NOSIGNAL, "CURLOPT_NOSIGNAL")
        static let followLocation = CurlOption(CURLOPT_FOLLOWLOCATION, "CURLOPT_FOLLOWLOCATION")
        static let bufferSize = CurlOption(CURLOPT_BUFFERSIZE, "CURLOPT_BUFFERSIZE")
        static let tcpKeepAlive = CurlOption(CURLOPT_TCP_KEEPALIVE, "CURLOPT_TCP_KEEPALIVE")
        static let httpGet = CurlOption(CURLOPT_HTTPGET, "CURLOPT_HTTPGET")
        static let noBody = CurlOption(CURLOPT_NOBODY, "CURLOPT_NOBODY")
        static let customRequest = CurlOption(CURLOPT_CUSTOMREQUEST, "CURLOPT_CUSTOMREQUEST")
        static let postFieldSize = CurlOption(CURLOPT_POSTFIELDSIZE_LARGE, "CURLOPT_POSTFIELDSIZE_LARGE")
        static let copyPostFields = CurlOption(CURLOPT_COPYPOSTFIELDS, "CURLOPT_COPYPOSTFIELDS")
        static let httpHeader = CurlOption(CURLOPT_HTTPHEADER, "CURLOPT_HTTPHEADER")
        static let connectTimeout = CurlOption(CURLOPT_CONNECTTIMEOUT_MS, "CURLOPT_CONNECTTIMEOUT_MS")
        static let verifyPeer = CurlOption(CURLOPT_SSL_VERIFYPEER, "CURLOPT_SSL_VERIFYPEER")
        static let verifyHost = CurlOption(CURLOPT_SSL_VERIFYHOST, "CURLOPT_SSL_VERIFYHOST")
        static let caInfo = CurlOption(CURLOPT_CAINFO, "CURLOPT_CAINFO")
        static let headerFunction = CurlOption(CURLOPT_HEADERFUNCTION, "CURLOPT_HEADERFUNCTION")
        static let headerData = CurlOption(CURLOPT_HEADERDATA, "CURLOPT_HEADERDATA")
        static let writeFunction = CurlOption(CURLOPT_WRITEFUNCTION, "CURLOPT_WRITEFUNCTION")
        static let writeData = CurlOption(CURLOPT_WRITEDATA, "CURLOPT_WRITEDATA")
        static let xferInfoFunction = CurlOption(CURLOPT_XFERINFOFUNCTION, "CURLOPT_XFERINFOFUNCTION")
        static let xferInfoData = CurlOption(CURLOPT_XFERINFODATA, "CURLOPT_XFERINFODATA")
        static let noProgress = CurlOption(CURLOPT_NOPROGRESS, "CURLOPT_NOPROGRESS")
        static let proxy = CurlOption(CURLOPT_PROXY, "CURLOPT_PROXY")
        static let noProxy = CurlOption(CURLOPT_NOPROXY, "CURLOPT_NOPROXY")
        static let proxyCAInfo = CurlOption(CURLOPT_PROXY_CAINFO, "CURLOPT_PROXY_CAINFO")
        static let proxyVerifyPeer = CurlOption(CURLOPT_PROXY_SSL_VERIFYPEER, "CURLOPT_PROXY_SSL_VERIFYPEER")
        static let proxyVerifyHost = CurlOption(CURLOPT_PROXY_SSL_VERIFYHOST, "CURLOPT_PROXY_SSL_VERIFYHOST")
        static let netrc = CurlOption(CURLOPT_NETRC, "CURLOPT_NETRC")
        static let netrcFile = CurlOption(CURLOPT_NETRC_FILE, "CURLOPT_NETRC_FILE")
        static let suppressConnectHeaders = CurlOption(CURLOPT_SUPPRESS_CONNECT_HEADERS, "CURLOPT_SUPPRESS_CONNECT_HEADERS")
        static let httpVersion = CurlOption(CURLOPT_HTTP_VERSION, "CURLOPT_HTTP_VERSION")
        static let share = CurlOption(CURLOPT_SHARE, "CURLOPT_SHARE")

        /// Every option Haul sets; a test checks each name against libcurl's own.
        static let all: [CurlOption] = [
            errorBuffer, url, protocols, noSignal, followLocation, bufferSize, tcpKeepAlive, httpGet, noBody,
            customRequest, postFieldSize, copyPostFields, httpHeader, connectTimeout, verifyPeer, verifyHost,
            caInfo, headerFunction, headerData, writeFunction, writeData, xferInfoFunction, xferInfoData,
            noProgress, proxy, noProxy, proxyCAInfo, proxyVerifyPeer, proxyVerifyHost, netrc, netrcFile, share,
            suppressConnectHeaders, httpVersion,
        ]
    }

    /// libcurl refused an option.
    ///
    /// Never ignored: a transfer that runs without an option it asked for silently loses what the
    /// option guaranteed (without CURLOPT_PROTOCOLS_STR, a URL could reach any protocol libcurl speaks).
    struct CurlOptionError: Error, Sendable, Equatable, CustomStringConvertible {
        let option: CurlOption
        let code: CURLcode

        var description: String {
            let version = CurlOptionError.libcurlVersion
            if code == CURLE_UNKNOWN_OPTION {
                return "libcurl \(version) does not support \(option.name), which Haul needs: install a newer libcurl"
            }
            let reason = String(cString: curl_easy_strerror(code))
            return "libcurl \(version) refused \(option.name) (\(reason)); the transfer was not started"
        }

        /// The version of the libcurl loaded at run time (which can differ from the headers Haul was built with).
        static var libcurlVersion: String {
            // CURLVERSION_NOW is a macro Swift cannot import; the version string is in every struct layout.
            guard let info = curl_version_info(CURLVERSION_FIRST), let version = info.pointee.version else { return "(unknown version)" }
            return String(cString: version)
        }
    }
#endif
