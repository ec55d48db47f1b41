#!/usr/bin/env python3
"""aria2p (a real aria2 client we did not write) checks a speed limit shared by two downloads of
`haul serve` (issue 36, item 7): after `changeGlobalOption({"max-overall-download-limit": ...})`
and two adds, every download moves within every second of `tellActive`, each gets a fair share
of the limit, and the speeds shown change with the bytes. Prints a JSON summary on success;
exits 1 with the reason otherwise."""
import argparse
import json
import sys
import time

import aria2p


def fail(message: str) -> None:
    print(message, file=sys.stderr)
    sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--url", action="append", required=True)
    parser.add_argument("--limit", type=int, default=256 * 1024)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()

    api = aria2p.API(aria2p.Client(host="http://127.0.0.1", port=args.port, secret=args.secret, timeout=10))
    api.set_global_options({"max-overall-download-limit": str(args.limit)})
    gids = [api.add_uris([url]).gid for url in args.url]
    samples = []
    start = time.monotonic()
    for second in range(1, args.seconds + 1):
        time.sleep(max(0.0, start + second - time.monotonic()))
        active = {download.gid: download for download in api.get_downloads(gids)}
        samples.append({gid: (active[gid].completed_length, active[gid].download_speed) for gid in gids})
    api.remove(api.get_downloads(gids), force=True)

    described = [{gid[-4:]: list(values) for gid, values in sample.items()} for sample in samples]
    # Every download moves within every second (after the first, while connections start).
    for before, after in zip(samples[1:], samples[2:]):
        for gid in gids:
            if after[gid][0] <= before[gid][0]:
                fail(f"{gid} stood still for a second: {described}")
    # Each gets a fair share of what the limit let through over the run.
    moved = {gid: samples[-1][gid][0] - samples[0][gid][0] for gid in gids}
    total = sum(moved.values())
    span = len(samples) - 1
    if not 0.6 * args.limit * span <= total <= 1.4 * args.limit * span:
        fail(f"together {total} bytes in {span} s under {args.limit} B/s: {described}")
    for gid in gids:
        if moved[gid] < total / len(gids) * 0.6:
            fail(f"{gid} got {moved[gid]} of {total} bytes: an unfair share: {described}")
    # The speeds shown are measured, not left over: they change while the bytes do.
    for gid in gids:
        speeds = {sample[gid][1] for sample in samples[2:]}
        if len(speeds) < 2:
            fail(f"{gid}'s downloadSpeed never changed: {described}")
    print(json.dumps({"ok": True, "moved": moved, "samples": described}))


if __name__ == "__main__":
    main()
