#!/usr/bin/env bash
# Progress a person sees under a speed limit (issue 36: "the figures a person sees are true"): how
# often each surface reports a download limited to 2 MiB/s over 8 connections, and whether the
# figures it reports keep moving and stay near the limit. A private nginx on loopback serves one
# file (BENCH_SIZE_MB, default 300 MiB, so that no run ends on its own); on it:
#
#   cli-x8     `haul --json -x 8 --limit-rate 2M`: the progress events per second on standard
#              output (each line timed as it arrives), the longest gap between two, the longest
#              time `bytes` stood still, and any `bytesPerSecond` above 1.5x the limit after 2 s.
#              The CLI cannot change its limit while it runs, so the limit is fixed.
#   cli-x1     the same at `-x 1 --limit-rate 2000` (one connection, a very low limit), for 6 s.
#   serve      `haul serve`: aria2.addUri with split 8 and max-download-limit 2 MiB/s, changed to
#              1 MiB/s after 5 s and to 3 MiB/s after 10 s by aria2.changeOption; aria2.tellStatus
#              polled every 0.1 s for 15 s: the new completedLength values per second, the longest
#              time it stood still, and downloadSpeed (and the speed measured from completedLength)
#              against the limit in force, 2 s after each change; then aria2.remove.
#
# The library's own progress stream (DownloadProgress under a limit changed twice) is measured by
# the test LimitedProgressTests (Tests/HaulTests/LimitedProgressTests.swift), not here.
#
# Every run is stopped by the script: the CLI runs by SIGINT after BENCH_SECONDS (the file would
# take minutes at 2 MiB/s; haul exits 130, the bytes kept for a resume, which is not tested here),
# haul serve by SIGTERM to its PID. Nothing but 127.0.0.1 is ever contacted.
#
#   bash bench/progress.sh                                  # 300 MiB, 15 s a run
#   BENCH_HAUL=.build/debug/haul bash bench/progress.sh     # a haul already built
#
# Environment: BENCH_SIZE_MB (default 300), BENCH_SECONDS (length of the -x 8 CLI run and of the
# serve run, default 15), BENCH_TMPDIR, BENCH_SCRATCH (default .build), BENCH_HAUL (a haul binary
# to use instead of building one with `swift build -c release --static-swift-stdlib`).
# Only the processes this script starts (nginx, haul, haul serve, its Python helper) are stopped,
# by their PIDs; nothing is left running, even on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-300}
seconds=${BENCH_SECONDS:-15}
scratch=${BENCH_SCRATCH:-.build}
source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light coreutils python3

bench_workdir progress
helper_pid=""
serve_pid=""
# stop_pid (scripts/nginx.sh) ends only PIDs this script started.
bench_cleanup_more() {
    # The helper stops the haul it started when it is told to stop (see measure.py).
    stop_pid "$helper_pid"
    helper_pid=""
    stop_pid "$serve_pid"
    serve_pid=""
}
mkdir -p "$work/root" "$work/out" "$work/nginx" "$work/serve-out" "$work/state"
if [[ -n "${BENCH_HAUL:-}" ]]; then
    haul_bin=$BENCH_HAUL
else
    build_haul_release "$scratch" "$work/build.log" || exit 1
fi

log "making a ${size_mb} MiB file"
head -c "$((size_mb * 1048576))" /dev/urandom >"$work/root/file.bin"
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" NGINX_HTTP_EXTRA="access_log off;" nginx_start
url="http://127.0.0.1:$nginx_port/file.bin"
log "nginx on $nginx_port (no server-side limit: haul's limit is the one measured)"

# The measuring helper: runs a CLI download and times each line it prints, or drives haul serve
# by JSON-RPC; appends one JSON line of figures to results.jsonl; prints the table at the end.
cat >"$work/measure.py" <<'PY'
import json, signal, statistics, subprocess, sys, threading, time, urllib.request

def stop(signum, frame):
    raise SystemExit(128 + signum)

signal.signal(signal.SIGTERM, stop)

def per_second(times, end):
    """Counts of the times in each whole second 1 .. end-1 (second 0 and the cut-off one left out)."""
    counts = [0] * max(int(end), 0)
    for t in times:
        if 1 <= t < int(end):
            counts[int(t)] += 1
    return counts[1:]

def spread(counts):
    if not counts:
        return [None, None, None]
    return [min(counts), statistics.median(counts), max(counts)]

def longest_still(samples):
    """samples: (t, value) in time order; the longest time from a value first seen to its change
    (or to the last sample)."""
    best, since, value = 0.0, None, None
    for t, v in samples:
        if v != value:
            if since is not None:
                best = max(best, t - since)
            since, value = t, v
    if since is not None and samples:
        best = max(best, samples[-1][0] - since)
    return best

def cli(results, name, seconds, limit, stderr_path, command):
    seconds, limit = float(seconds), float(limit)
    with open(stderr_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        timer = threading.Timer(seconds, proc.send_signal, [signal.SIGINT])
        timer.start()
        events = []  # (t, bytes, bytesPerSecond)
        try:
            for line in proc.stdout:
                t = time.monotonic() - start
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "progress":
                    events.append((t, event["bytes"], event["bytesPerSecond"]))
            code = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    end = time.monotonic() - start
    if code not in (0, 130):
        sys.exit(f"error: {name}: haul exited {code}; see {stderr_path}")
    if not events:
        sys.exit(f"error: {name}: no progress event")
    cut = min(end, seconds)
    times = [e[0] for e in events]
    gaps = [b - a for a, b in zip(times, times[1:])]
    late = [e for e in events if e[0] >= 2]
    over = [e for e in late if e[2] > 1.5 * limit]
    mean = None
    if len(late) >= 2 and late[-1][0] > late[0][0]:
        mean = (late[-1][1] - late[0][1]) / (late[-1][0] - late[0][0])
    row = {
        "surface": name, "seconds": round(cut, 1), "limit": limit, "samples": len(events),
        "per_second": spread(per_second(times, cut)),
        "first": round(times[0], 2),
        "longest_gap": round(max(gaps), 2) if gaps else None,
        "longest_still": round(longest_still([(e[0], e[1]) for e in events]), 2),
        "speed_over_1_5x": len(over),
        "max_speed_ratio": round(max(e[2] for e in late) / limit, 2) if late else None,
        "max_speed_at": round(max(late, key=lambda e: e[2])[0], 2) if late else None,
        "bytes_ratio": round(mean / limit, 2) if mean is not None else None,
        "exit": code,
    }
    with open(results, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"    {name}: {json.dumps(row)}")

def rpc(port, secret):
    url = f"http://127.0.0.1:{port}/jsonrpc"
    ids = iter(range(1, 1 << 30))
    def call(method, *params):
        body = json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": method,
                           "params": [f"token:{secret}", *params]}).encode()
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.load(response)
        if "error" in answer:
            sys.exit(f"error: {method}: {answer['error']}")
        return answer["result"]
    return call

def serve(results, port, secret, file_url, seconds):
    seconds = float(seconds)
    call = rpc(port, secret)
    mib = 1048576
    # (from, limit): the limit in force from that second on.
    plan = [(0.0, 2 * mib), (seconds / 3, 1 * mib), (2 * seconds / 3, 3 * mib)]
    start = time.monotonic()
    gid = call("aria2.addUri", [file_url], {"split": "8", "max-download-limit": str(plan[0][1])})
    polls = []  # (t, completedLength, downloadSpeed, status, connections)
    step, changed = 1, []
    try:
        while True:
            t = time.monotonic() - start
            if t >= seconds:
                break
            if step < len(plan) and t >= plan[step][0]:
                call("aria2.changeOption", gid, {"max-download-limit": str(plan[step][1])})
                changed.append(round(t, 2))
                step += 1
            s = call("aria2.tellStatus", gid)
            polls.append((time.monotonic() - start, int(s["completedLength"]), int(s["downloadSpeed"]),
                          s["status"], s.get("connections")))
            time.sleep(max(0.0, 0.1 - (time.monotonic() - start - t)))
    finally:
        try:
            call("aria2.remove", gid)
        except Exception as error:  # the figures are kept; a failed remove is reported
            print(f"warning: aria2.remove: {error}", file=sys.stderr)
    bad = {p[3] for p in polls} - {"active"}
    if bad:
        sys.exit(f"error: serve: status {sorted(bad)} during the run")
    # New completedLength values first seen in each second.
    new_at, new_values, last = [], [], None
    for t, done, *_ in polls:
        if done != last and last is not None:
            new_at.append(t)
            new_values.append(done)
        last = done
    phases = []
    for i, (_, limit) in enumerate(plan):
        begin = 0.0 if i == 0 else changed[i - 1]  # when the limit was set
        until = changed[i] if i < len(changed) else seconds
        phase = [p for p in polls if begin <= p[0] < until]
        window = [p for p in phase if p[0] >= begin + 2]  # settled 2 s
        if len(window) < 2:
            phases.append(None)
            continue
        # When downloadSpeed came within 5% of the limit for the rest of the phase.
        outside = [p[0] for p in phase if abs(p[2] / limit - 1) > 0.05]
        later = [p[0] for p in phase if outside and p[0] > outside[-1]]
        settled = (later[0] if later else None) if outside else phase[0][0]
        peak = max(window, key=lambda p: p[2])
        # The rate completedLength moved, between the polls that first saw a new value (each
        # value's age is then at most one poll interval, not one update interval).
        fresh = [(t, done) for t, done in zip(new_at, new_values) if begin + 2 <= t < until]
        moved = (fresh[-1][1] - fresh[0][1]) / (fresh[-1][0] - fresh[0][0]) / limit if len(fresh) >= 2 else None
        phases.append({
            "limit": limit, "from": round(begin, 2),
            "speed_at_2s": round(window[0][2] / limit, 2),
            "speed_median": round(statistics.median(p[2] for p in window) / limit, 2),
            "speed_max": round(peak[2] / limit, 2), "speed_max_at": round(peak[0], 2),
            "within_5pct_after": round(settled - begin, 2) if settled is not None else None,
            "bytes_ratio": round(moved, 2) if moved is not None else None,
        })
    row = {
        "surface": "serve", "seconds": round(polls[-1][0], 1), "limit": plan[0][1], "samples": len(polls),
        "per_second": spread(per_second(new_at, seconds)),
        "longest_still": round(longest_still([(p[0], p[1]) for p in polls if p[1] > 0]), 2),
        "first": round(next((p[0] for p in polls if p[1] > 0), float("nan")), 2),
        "changed_at": changed, "phases": phases,
        "connections": sorted({p[4] for p in polls if p[4] is not None}),
    }
    with open(results, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"    serve: {json.dumps(row)}")

def table(results):
    rows = [json.loads(line) for line in open(results)]
    fmt = lambda v: "-" if v is None else (f"{v:g}" if isinstance(v, (int, float)) else str(v))
    ratio = lambda v: "-" if v is None else f"{v:.2f}x"
    rate = lambda b: f"{b / 1048576:g} MiB/s" if b >= 1048576 else f"{b:g} B/s"
    print(f"{'surface':<7} {'limit':>11} {'s':>5} {'per s min/med/max':>17} {'gap max s':>9} "
          f"{'still max s':>11}  speed vs limit")
    for r in rows:
        lo, med, hi = r["per_second"]
        if r["surface"] == "serve":
            limit, gap, speed = "2>1>3 MiB/s", None, "below, by limit"
        else:
            limit, gap = rate(r["limit"]), r["longest_gap"]
            speed = (f"bytesPerSecond max {ratio(r['max_speed_ratio'])} (at {fmt(r['max_speed_at'])} s), "
                     f"{r['speed_over_1_5x']} above 1.5x; bytes moved {ratio(r['bytes_ratio'])}")
        print(f"{r['surface']:<7} {limit:>11} {fmt(r['seconds']):>5} "
              f"{fmt(lo) + '/' + fmt(med) + '/' + fmt(hi):>17} {fmt(gap):>9} "
              f"{fmt(r['longest_still']):>11}  {speed}")
    for r in rows:
        if r["surface"] != "serve":
            continue
        print(f"serve, from 2 s after each limit was set (changeOption at {r['changed_at']} s):")
        print(f"  {'limit':>9} {'from s':>6} {'speed@+2s':>9} {'median':>7} {'max':>6} {'max at s':>8} "
              f"{'within 5% after s':>17} {'bytes moved':>11}")
        for p in r["phases"]:
            if p is None:
                continue
            print(f"  {rate(p['limit']):>9} {fmt(p['from']):>6} {ratio(p['speed_at_2s']):>9} "
                  f"{ratio(p['speed_median']):>7} {ratio(p['speed_max']):>6} {fmt(p['speed_max_at']):>8} "
                  f"{fmt(p['within_5pct_after']):>17} {ratio(p['bytes_ratio']):>11}")

if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "cli":
        cli(*args[:5], args[6:])  # results name seconds limit stderr -- command...
    elif mode == "serve":
        serve(*args)
    else:
        table(*args)
PY

# run_helper ARGS...: the helper in the background, its PID kept for the cleanup, waited for.
run_helper() {
    python3 "$work/measure.py" "$@" &
    helper_pid=$!
    local code=0
    wait "$helper_pid" || code=$?
    helper_pid=""
    return "$code"
}

results="$work/results.jsonl"
limit=2097152
log "cli-x8: haul --json -x 8 --limit-rate 2M, stopped by SIGINT after $seconds s"
rm -f "$work/out/"*
run_helper cli "$results" cli-x8 "$seconds" "$limit" "$work/cli-x8.err" -- \
    "$haul_bin" --json -x 8 --limit-rate 2M -o "$work/out/x8.bin" "$url"

log "cli-x1: haul --json -x 1 --limit-rate 2000, stopped by SIGINT after 6 s"
run_helper cli "$results" cli-x1 6 2000 "$work/cli-x1.err" -- \
    "$haul_bin" --json -x 1 --limit-rate 2000 -o "$work/out/x1.bin" "$url"

serve_port=$(nginx_free_port)
secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$secret" >"$work/secret"
log "serve: haul serve on $serve_port; 2 MiB/s, 1 MiB/s after $((seconds / 3)) s, 3 MiB/s after $((2 * seconds / 3)) s"
"$haul_bin" serve --listen "127.0.0.1:$serve_port" --secret-file "$work/secret" -d "$work/serve-out" \
    --state "$work/state" -j 1 </dev/null >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do
    kill -0 "$serve_pid" 2>/dev/null || { echo "error: haul serve exited:" >&2; cat "$work/serve.log" >&2; exit 1; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$serve_port") 2>/dev/null; then break; fi
    sleep 0.1
done
run_helper serve "$results" "$serve_port" "$secret" "$url" "$seconds"
stop_pid "$serve_pid"
serve_pid=""

echo
echo "${size_mb} MiB on loopback; per s: progress events (cli) or new completedLength values seen by a"
echo "0.1 s poller (serve), over the seconds after the first; speed vs limit: cli the largest"
echo "bytesPerSecond after 2 s, how many were above 1.5x, and the rate bytes moved; serve: downloadSpeed"
echo "/ limit 2 s after each limit was set, its median and largest after that, when it came within 5%"
echo "of the limit for good, and the rate completedLength moved / limit"
python3 "$work/measure.py" table "$results"
