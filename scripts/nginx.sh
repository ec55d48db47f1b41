# Shared by the benchmarks and the demo: install missing Debian packages (scripts/install.sh),
# and start and stop a private nginx on a free loopback port. Source this file, set the variables
# below, then call `nginx_start`; `nginx_stop` ends only the nginx it started, by its PID.
#
#   NGINX_DIR           a directory for the config, pid file and logs (created if missing)
#   NGINX_ROOT          the document root
#   NGINX_HTTP_EXTRA    optional directives for the http block (access log, keep-alive, ...)
#   NGINX_SERVER_EXTRA  optional directives for the server block (e.g. a limited location)
#   NGINX_LISTEN_EXTRA  optional parameters of the listen directive (e.g. `ssl`)
# Sets nginx_pid and nginx_port.

# install_missing PACKAGE...: installs the Debian packages among its arguments that are not
# installed yet (scripts/install.sh).
source "$(dirname "${BASH_SOURCE[0]}")/install.sh"

# Builds the release haul in swift build's scratch path $1, logging to $2; sets haul_bin. On a
# failed build prints the log's tail and returns 1.
build_haul_release() {
    local scratch=$1 build_log=$2
    echo "==> building haul: swift build -c release --static-swift-stdlib --scratch-path $scratch"
    if ! swift build -c release --static-swift-stdlib --scratch-path "$scratch" >"$build_log" 2>&1; then
        echo "error: the release build failed (tail):" >&2
        tail -n 30 "$build_log" >&2
        return 1
    fi
    haul_bin="$scratch/release/haul"
    [[ -x "$haul_bin" ]] || { echo "error: no $haul_bin" >&2; return 1; }
}

nginx_pid=""
nginx_port=""
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

nginx_free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    else
        echo $((20000 + RANDOM % 40000))
    fi
}

# stop_pid PID: SIGTERM, up to 5 s to exit, then SIGKILL; only ever a PID the caller started.
stop_pid() {
    local pid=$1
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

nginx_stop() {
    stop_pid "$nginx_pid"
    nginx_pid=""
}

nginx_start() {
    local dir=$NGINX_DIR port attempt user_line=""
    mkdir -p "$dir"
    if ((EUID == 0)); then user_line="user root;"; fi
    for attempt in 1 2 3 4 5; do
        port=$(nginx_free_port)
        rm -f "$dir/nginx.pid" "$dir/error.log"
        cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
$user_line
pid "$dir/nginx.pid";
lock_file "$dir/nginx.lock";
error_log "$dir/error.log" notice;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    client_body_temp_path "$dir/client_body";
    proxy_temp_path "$dir/proxy";
    fastcgi_temp_path "$dir/fastcgi";
    sendfile on;
    tcp_nopush on;
    etag on;
    ${NGINX_HTTP_EXTRA:-}
    server {
        listen 127.0.0.1:$port ${NGINX_LISTEN_EXTRA:-};
        root "$NGINX_ROOT";
        location / { }
        ${NGINX_SERVER_EXTRA:-}
    }
}
CONF
        "$nginx_bin" -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" </dev/null >"$dir/stderr.log" 2>&1 &
        nginx_pid=$!
        for _ in $(seq 100); do
            if ! kill -0 "$nginx_pid" 2>/dev/null; then
                break
            fi
            # Ready once nginx wrote its pid file (after binding) and the port accepts connections.
            if [[ "$(cat "$dir/nginx.pid" 2>/dev/null)" == "$nginx_pid" ]] &&
                (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                nginx_port=$port
                return 0
            fi
            sleep 0.1
        done
        nginx_stop
        if grep -q 'Address already in use' "$dir/error.log" "$dir/stderr.log" 2>/dev/null; then
            echo "==> port $port was taken, retrying ($attempt)"
            continue
        fi
        echo "error: nginx did not start:" >&2
        cat "$dir/error.log" "$dir/stderr.log" >&2 2>/dev/null || true
        return 1
    done
    echo "error: nginx could not bind a free port" >&2
    return 1
}
