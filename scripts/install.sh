# install_missing PACKAGE...: installs the Debian packages among its arguments that are not
# installed yet. Source this file (scripts/nginx.sh does), then call it with the lists of
# scripts/packages.sh, e.g. `install_missing "${build_packages[@]}" "${test_packages[@]}"`.
#
# Runs as root, or through sudo. When something is missing: apt-get update, then apt-get install
# of only the missing packages. Service start-up is forbidden during the install (a temporary
# /usr/sbin/policy-rc.d, when running as root and there is none), and an nginx service the install
# started anyway is stopped by its PID: the tests and the demo start their own nginx on a free
# loopback port, a system nginx on :80 is not wanted. Only its own leftovers are cleaned up. The
# body runs in a subshell, so its traps and variables do not touch the caller's.
install_missing() (
    run() { printf '+ %s\n' "$*"; "$@"; }
    installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == *"ok installed" ]]; }
    alive() { [[ "$(cat "/proc/$1/comm" 2>/dev/null)" == nginx ]]; }

    if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        echo "==> warning: no dpkg-query/apt-get (not Debian or Ubuntu); not checked: $*" >&2
        return 0
    fi

    local -A seen=()
    local package missing=() count=0
    for package in "$@"; do
        [[ -z "${seen[$package]:-}" ]] || continue
        seen[$package]=1
        count=$((count + 1))
        installed "$package" || missing+=("$package")
    done
    if ((${#missing[@]} == 0)); then
        echo "==> all $count system packages present"
        return 0
    fi

    local sudo=()
    if ((EUID != 0)); then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "error: need root (or sudo) to install: ${missing[*]}" >&2
            return 1
        fi
    fi

    local nginx_pid_before="" nginx_pid=""
    if [[ -r /run/nginx.pid ]]; then
        nginx_pid_before=$(tr -dc '0-9' </run/nginx.pid || true)
    fi

    # Debian starts services from maintainer scripts unless policy-rc.d says no (exit 101).
    local created_policy=""
    trap '[[ -z "$created_policy" ]] || rm -f "$created_policy"' EXIT
    trap 'exit 130' INT TERM HUP
    if [[ ! -e /usr/sbin/policy-rc.d && ${#sudo[@]} -eq 0 ]]; then
        echo "==> forbidding service start-up during the install (temporary /usr/sbin/policy-rc.d)"
        created_policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d || return $?
        chmod 755 /usr/sbin/policy-rc.d || return $?
    fi

    echo "==> installing: ${missing[*]}"
    run "${sudo[@]}" apt-get update || return $?
    run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}" || return $?
    if [[ -n "$created_policy" ]]; then
        rm -f "$created_policy"
        created_policy=""
    fi

    # If the install started the nginx system service anyway, stop that one process by its PID.
    if [[ " ${missing[*]} " == *" nginx-light "* && -r /run/nginx.pid ]]; then
        nginx_pid=$(tr -dc '0-9' </run/nginx.pid || true)
        if [[ -n "$nginx_pid" && "$nginx_pid" != "$nginx_pid_before" ]] && alive "$nginx_pid"; then
            echo "==> stopping the nginx service the install started (PID $nginx_pid)"
            "${sudo[@]}" kill -TERM "$nginx_pid" || true
            for _ in $(seq 50); do
                alive "$nginx_pid" || break
                sleep 0.1
            done
            if alive "$nginx_pid"; then
                "${sudo[@]}" kill -KILL "$nginx_pid" || true
            fi
        fi
    fi
)
