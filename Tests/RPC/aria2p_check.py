#!/usr/bin/env python3
"""Drive an aria2-compatible JSON-RPC server with the real `aria2p` client and check its answers.

Developed against aria2c 1.36 (the reference); the Swift test suite runs it against `haul serve`.
Phases (each a separate process; the server may be restarted in between):

  basic          version, notifications over the WebSocket, addUri, tellStatus/tellActive/
                 tellWaiting/tellStopped, getGlobalStat, pause/unpause, changeOption/getOption,
                 changeGlobalOption/getGlobalOption, remove, purgeDownloadResult, a wrong or
                 missing secret, system.multicall.
  start-restart  adds a slow download, waits until it has bytes, writes {"gid", "completed", ...}
                 to --state-file and exits leaving it running.
  after-restart  reads the gid back, checks the restarted server knows it and finishes it by
                 itself, and that the file has the given SHA-256.
  remove-figures adds a slow download, waits until it has --min-bytes, removes it with
                 aria2.remove alone, and checks that tellStatus and tellStopped keep its
                 completedLength (at least what was seen before) and its totalLength, read after
                 read for --hold seconds, as aria2 does.

Exit 0 and one line of JSON on stdout on success; exit 1 and "FAIL: ..." on stderr on failure.
See README.md beside this file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path

try:
    import aria2p
    import requests
    import websocket
except ImportError as error:  # pragma: no cover - environment problem
    sys.stderr.write(f"FAIL: cannot import aria2p/requests/websocket ({error}); "
                     "install them with: pip install aria2p websocket-client\n")
    sys.exit(1)

NOTIFICATION_KINDS = ("start", "pause", "stop", "complete", "error")
GID_PATTERN = re.compile(r"^[0-9a-f]{16}$")


class CheckFailed(Exception):
    """A check did not hold; the message says which and what was seen."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def log(args: argparse.Namespace, message: str) -> None:
    if args.verbose:
        sys.stderr.write(f"[aria2p_check {time.strftime('%H:%M:%S')}] {message}\n")
        sys.stderr.flush()


def call(what: str, function, *arguments, **keywords):
    """Runs one RPC through aria2p; turns any exception into a CheckFailed that names the call."""
    try:
        return function(*arguments, **keywords)
    except aria2p.ClientException as error:
        raise CheckFailed(f"{what}: the server answered with an error: code={error.code} "
                          f"message={error.message!r}") from error
    except requests.exceptions.JSONDecodeError as error:
        raise CheckFailed(f"{what}: the server's HTTP answer is not JSON ({error})") from error
    except requests.RequestException as error:
        raise CheckFailed(f"{what}: HTTP request to the server failed: {error!r}") from error
    except (ValueError, KeyError, TypeError) as error:
        # requests' .json() raises ValueError on a non-JSON body; aria2p raises KeyError when the
        # answer has neither "error" nor "result".
        raise CheckFailed(f"{what}: aria2p could not read the server's answer: {error!r}") from error


def wait_until(what: str, probe, timeout: float, interval: float = 0.1):
    """Calls probe() until it returns a true value (which is returned) or timeout seconds pass.

    probe may raise CheckFailed to abort at once. On timeout the failure names `what` and the last
    value that probe described through its `last` attribute (set by the caller's closure).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            last = getattr(probe, "last", None)
            raise CheckFailed(f"timed out after {timeout:g} s waiting for {what}"
                              + (f"; last seen: {last}" if last is not None else ""))
        time.sleep(interval)


def describe(download) -> str:
    struct = download._struct  # noqa: SLF001 - the raw tellStatus answer, for failure messages
    keys = ("gid", "status", "totalLength", "completedLength", "downloadSpeed", "errorCode",
            "errorMessage", "dir")
    return json.dumps({key: struct.get(key) for key in keys if key in struct})


def as_int(what: str, getter) -> int:
    """Reads an aria2p property that converts a string field with int(); checks it worked."""
    try:
        value = getter()
    except (KeyError, ValueError, TypeError) as error:
        raise CheckFailed(f"{what}: missing or not a number ({error!r})") from error
    check(isinstance(value, int), f"{what}: expected an int, aria2p gave {value!r}")
    return value


def same_path(a, b) -> bool:
    return os.path.realpath(str(a)) == os.path.realpath(str(b))


def under(path, directory) -> bool:
    return os.path.realpath(str(path)).startswith(os.path.realpath(str(directory)).rstrip(os.sep) + os.sep)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Notifications:
    """Collects the notifications aria2p's listener thread delivers, by kind and gid."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.events: list[tuple[str, str]] = []
        self.connected = threading.Event()
        self.connect_error: str | None = None
        self.thread_error: str | None = None

    def callback(self, kind: str):
        def on_notification(_api, gid) -> None:
            with self.condition:
                self.events.append((kind, gid))
                self.condition.notify_all()
        return on_notification

    def count(self, kind: str, gid: str) -> int:
        with self.condition:
            return sum(1 for event in self.events if event == (kind, gid))

    def by_kind(self) -> dict:
        with self.condition:
            return {kind: [gid for k, gid in self.events if k == kind] for kind in NOTIFICATION_KINDS}

    def wait_for(self, api, kind: str, gid: str, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.condition:
            while sum(1 for event in self.events if event == (kind, gid)) < count:
                if self.thread_error:
                    raise CheckFailed(f"the notification listener failed: {self.thread_error}")
                if api.listener is not None and not api.listener.is_alive():
                    raise CheckFailed(f"waiting for aria2.onDownload{kind.capitalize()} for {gid}: the "
                                      "notification listener stopped (the server closed the WebSocket?)")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = [f"{k}:{g}" for k, g in self.events]
                    raise CheckFailed(f"timed out after {timeout:g} s waiting for notification "
                                      f"aria2.onDownload{kind.capitalize()} #{count} for gid {gid}; "
                                      f"received so far: {seen}")
                self.condition.wait(min(remaining, 0.2))


def start_listener(api, args, notifications: Notifications) -> None:
    """Starts aria2p's threaded WebSocket listener and waits until its WebSocket is open.

    aria2p opens the socket inside its thread with websocket.create_connection; the wrapper below
    only observes that call (so downloads are added after the socket is open and no notification
    is missed). A failure in the thread is recorded through threading.excepthook.
    """
    original = websocket.create_connection

    def observed_create_connection(*arguments, **keywords):
        try:
            socket = original(*arguments, **keywords)
        except Exception as error:
            notifications.connect_error = repr(error)
            notifications.connected.set()
            raise
        # The socket is aria2p's own, used as aria2p uses it: no call is made on it (aria2 and
        # haul serve notify every connected socket).
        notifications.connected.set()
        return socket

    websocket.create_connection = observed_create_connection

    previous_hook = threading.excepthook

    def hook(hook_args) -> None:
        if hook_args.thread is api.listener:
            notifications.thread_error = "".join(traceback.format_exception(
                hook_args.exc_type, hook_args.exc_value, hook_args.exc_traceback)).strip()
        else:
            previous_hook(hook_args)

    threading.excepthook = hook

    api.listen_to_notifications(
        threaded=True,
        on_download_start=notifications.callback("start"),
        on_download_pause=notifications.callback("pause"),
        on_download_stop=notifications.callback("stop"),
        on_download_complete=notifications.callback("complete"),
        on_download_error=notifications.callback("error"),
        timeout=1,  # the listener's recv timeout: how fast stop_listening() takes effect
    )
    check(notifications.connected.wait(args.timeout),
          f"the notification WebSocket ({api.client.ws_server}) did not open within {args.timeout:g} s")
    check(notifications.connect_error is None,
          f"aria2p could not open the notification WebSocket {api.client.ws_server}: "
          f"{notifications.connect_error}")
    # aria2p's thread returns silently when the connection is refused or closed right away.
    time.sleep(0.2)
    check(api.listener is not None and api.listener.is_alive(),
          f"the notification listener thread ended right after connecting to {api.client.ws_server}"
          + (f": {notifications.thread_error}" if notifications.thread_error else
             " (connection refused or closed by the server)"))


def stop_listener(api, args, notifications: Notifications) -> None:
    if api.listener is None:
        return
    check(notifications.thread_error is None,
          f"the notification listener failed: {notifications.thread_error}")
    check(api.listener.is_alive(), f"the notification listener ended before the end of the run "
          f"(the server closed the WebSocket {api.client.ws_server}?)")
    api.client.stop_listening()
    api.listener.join(args.timeout)
    check(not api.listener.is_alive(),
          f"the notification listener thread did not stop within {args.timeout:g} s")
    api.stop_listening()  # joins the (finished) thread and clears api.listener
    check(notifications.thread_error is None,
          f"the notification listener failed: {notifications.thread_error}")


def make_api(args, secret=None):
    secret = args.secret if secret is None else secret
    return aria2p.API(aria2p.Client(host=args.host, port=args.port, secret=secret,
                                    timeout=args.rpc_timeout))


def check_version(api) -> dict:
    version = call("aria2.getVersion", api.client.get_version)
    check(isinstance(version, dict), f"aria2.getVersion: expected an object, got {version!r}")
    check(isinstance(version.get("version"), str) and version["version"] != "",
          f"aria2.getVersion: 'version' should be a non-empty string, got {version!r}")
    check(isinstance(version.get("enabledFeatures"), list)
          and all(isinstance(f, str) for f in version["enabledFeatures"]),
          f"aria2.getVersion: 'enabledFeatures' should be a list of strings, got {version!r}")
    return version


def refresh(download, what: str) -> None:
    call(f"aria2.tellStatus({download.gid}) [{what}]", download.update)


def wait_status(download, wanted: set, args, what: str, allowed: set | None = None,
                extra=None):
    """Polls tellStatus until the status is in `wanted` (and extra(download) holds).

    Fails at once on a status outside wanted | allowed (e.g. 'error' while waiting for active).
    """
    def probe():
        refresh(download, what)
        status = download.status
        probe.last = describe(download)
        if allowed is not None and status not in wanted | allowed:
            raise CheckFailed(f"{what}: status became {status!r}, expected one of "
                              f"{sorted(wanted | allowed)}; download: {describe(download)}")
        return status in wanted and (extra is None or extra(download))
    probe.last = None
    wait_until(what, probe, args.timeout)


def gids_of(structs, what: str) -> list:
    check(isinstance(structs, list), f"{what}: expected a list, got {structs!r}")
    for struct in structs:
        check(isinstance(struct, dict) and isinstance(struct.get("gid"), str),
              f"{what}: every entry should be an object with a string 'gid', got {struct!r}")
    return [struct["gid"] for struct in structs]


def check_stats(api, what: str) -> dict:
    stats = call(f"aria2.getGlobalStat [{what}]", api.get_stats)
    values = {
        "download_speed": as_int(f"getGlobalStat.downloadSpeed [{what}]", lambda: stats.download_speed),
        "upload_speed": as_int(f"getGlobalStat.uploadSpeed [{what}]", lambda: stats.upload_speed),
        "num_active": as_int(f"getGlobalStat.numActive [{what}]", lambda: stats.num_active),
        "num_waiting": as_int(f"getGlobalStat.numWaiting [{what}]", lambda: stats.num_waiting),
        "num_stopped": as_int(f"getGlobalStat.numStopped [{what}]", lambda: stats.num_stopped),
        "num_stopped_total": as_int(f"getGlobalStat.numStoppedTotal [{what}]",
                                    lambda: stats.num_stopped_total),
    }
    for key, value in values.items():
        check(value >= 0, f"getGlobalStat [{what}]: {key} is negative ({value})")
    return values


def check_file_struct(download, what: str) -> None:
    check(len(download.files) >= 1, f"{what}: 'files' is empty; download: {describe(download)}")
    first = download._struct["files"][0]  # noqa: SLF001
    for key in ("index", "path", "length", "completedLength", "selected", "uris"):
        check(key in first, f"{what}: files[0] has no {key!r}: {first!r}")
    as_int(f"{what}: files[0].index", lambda: download.files[0].index)
    as_int(f"{what}: files[0].length", lambda: download.files[0].length)
    as_int(f"{what}: files[0].completedLength", lambda: download.files[0].completed_length)
    check(download.files[0].selected is True,
          f"{what}: files[0].selected should be \"true\", got {first.get('selected')!r}")


def phase_basic(args) -> dict:
    for name in ("url", "url2", "dir"):
        check(getattr(args, name), f"--phase basic needs --{name.replace('_', '-')}")
    directory = Path(args.dir)
    api = make_api(args)
    summary: dict = {"phase": "basic"}
    notifications = Notifications()

    # 1. getVersion.
    version = check_version(api)
    summary["version"] = version["version"]
    summary["enabled_features"] = version["enabledFeatures"]

    # 2. Notifications over ws://host:port/jsonrpc.
    start_listener(api, args, notifications)
    summary["listener"] = api.client.ws_server
    try:
        return basic_steps(api, args, directory, notifications, summary)
    finally:
        summary["notifications"] = notifications.by_kind()
        if api.listener is not None:
            api.client.stop_listening()
            api.listener.join(args.timeout)


def basic_steps(api, args, directory: Path, notifications: Notifications, summary: dict) -> dict:
    # 3. Add both downloads.
    big = call("aria2.addUri(url, {dir}) / tellStatus", api.add_uris, [args.url], options={"dir": str(directory)})
    check(isinstance(big.gid, str) and GID_PATTERN.match(big.gid) is not None,
          f"aria2.addUri: the gid should be 16 lower-case hex digits, got {big.gid!r}")
    small = call("aria2.addUri(url2) / tellStatus", api.add_uris, [args.url2])
    check(isinstance(small.gid, str) and GID_PATTERN.match(small.gid) is not None,
          f"aria2.addUri: the gid should be 16 lower-case hex digits, got {small.gid!r}")
    check(big.gid != small.gid, f"aria2.addUri gave the same gid {big.gid} to two downloads")
    summary["gid"] = big.gid
    summary["gid2"] = small.gid
    log(args, f"added {big.gid} ({args.url}) and {small.gid} ({args.url2})")

    # 4. The big download becomes active with bytes.
    wait_status(big, {"active"}, args, f"{big.gid} to be active with completedLength > 0",
                allowed={"waiting"}, extra=lambda d: d.completed_length > 0)
    notifications.wait_for(api, "start", big.gid, 1, args.timeout)

    downloads = call("api.get_downloads (tellActive, tellWaiting(0,1000), tellStopped(0,1000))",
                     api.get_downloads)
    listed = [download.gid for download in downloads]
    check(big.gid in listed and small.gid in listed,
          f"api.get_downloads() should list {big.gid} and {small.gid}, listed {listed}")
    # No check for duplicates: aria2p lists with three separate calls (tellActive, tellWaiting,
    # tellStopped), so a download that finishes in between is legitimately listed twice.
    active = gids_of(call("aria2.tellActive", api.client.tell_active), "aria2.tellActive")
    check(big.gid in active, f"aria2.tellActive should contain the active {big.gid}, got {active}")

    stats = check_stats(api, "while active")
    check(stats["num_active"] >= 1, f"getGlobalStat.numActive should be >= 1 while {big.gid} is active, "
          f"got {stats}")
    summary["stats_active"] = stats

    refresh(big, "active download's fields")
    check(same_path(big.dir, directory),
          f"{big.gid}: 'dir' should be {directory} (the addUri option), got {str(big.dir)!r}")
    check_file_struct(big, big.gid)
    check(under(big.files[0].path, directory),
          f"{big.gid}: files[0].path should be under {directory}, got {str(big.files[0].path)!r}")
    total = as_int(f"{big.gid}: totalLength", lambda: big.total_length)
    if args.size is not None:
        check(total == args.size, f"{big.gid}: totalLength should be {args.size}, got {total}")
    else:
        check(total > 0, f"{big.gid}: totalLength should be known (> 0) once bytes arrive, got {total}")
    completed = as_int(f"{big.gid}: completedLength", lambda: big.completed_length)
    check(0 < completed <= total, f"{big.gid}: completedLength {completed} not in (0, {total}]")
    check(as_int(f"{big.gid}: uploadSpeed", lambda: big.upload_speed) == 0,
          f"{big.gid}: uploadSpeed should be 0 for an HTTP download, got {big.upload_speed}")
    as_int(f"{big.gid}: downloadSpeed", lambda: big.download_speed)
    as_int(f"{big.gid}: uploadLength", lambda: big.upload_length)
    as_int(f"{big.gid}: connections", lambda: big.connections)
    uris = big.files[0].uris
    check(isinstance(uris, list) and any(isinstance(u, dict) and u.get("uri") == args.url for u in uris),
          f"{big.gid}: files[0].uris should contain {{'uri': {args.url!r}, ...}}, got {uris!r}")
    check(isinstance(big.name, str) and big.name != "", f"{big.gid}: aria2p could not derive a name")
    summary["path"] = str(big.files[0].path)
    summary["total_length"] = total

    # 5. The small download completes.
    wait_status(small, {"complete"}, args, f"{small.gid} to be complete",
                allowed={"active", "waiting"})
    check_file_struct(small, small.gid)
    small_path = small.files[0].path
    small_total = as_int(f"{small.gid}: totalLength", lambda: small.total_length)
    check(as_int(f"{small.gid}: completedLength", lambda: small.completed_length) == small_total,
          f"{small.gid}: complete but completedLength != totalLength: {describe(small)}")
    if args.size2 is not None:
        check(small_total == args.size2, f"{small.gid}: totalLength should be {args.size2}, got {small_total}")
    check(small_path.is_file(), f"{small.gid}: complete but there is no file at files[0].path {small_path}")
    on_disk = small_path.stat().st_size
    check(on_disk == (args.size2 if args.size2 is not None else small_total),
          f"{small.gid}: the file {small_path} has {on_disk} bytes, expected "
          f"{args.size2 if args.size2 is not None else small_total}")
    notifications.wait_for(api, "complete", small.gid, 1, args.timeout)
    stopped = gids_of(call("aria2.tellStopped(0, 100)", api.client.tell_stopped, 0, 100),
                      "aria2.tellStopped")
    check(small.gid in stopped, f"aria2.tellStopped should contain the complete {small.gid}, got {stopped}")
    summary["status2"] = small.status
    summary["path2"] = str(small_path)

    # 6. Pause, then unpause.
    starts_before = notifications.count("start", big.gid)
    results = call(f"aria2.pause({big.gid})", api.pause, [big])
    check(results == [True], f"api.pause([{big.gid}]) should give [True], got {[str(r) or repr(r) for r in results]}")
    wait_status(big, {"paused"}, args, f"{big.gid} to be paused", allowed={"active", "waiting"})
    waiting = gids_of(call("aria2.tellWaiting(0, 100)", api.client.tell_waiting, 0, 100), "aria2.tellWaiting")
    check(big.gid in waiting, f"aria2.tellWaiting(0, 100) should contain the paused {big.gid}, got {waiting}")
    active = gids_of(call("aria2.tellActive", api.client.tell_active), "aria2.tellActive")
    check(big.gid not in active, f"aria2.tellActive should not contain the paused {big.gid}, got {active}")
    stats = check_stats(api, "while paused")
    check(stats["num_waiting"] >= 1, f"getGlobalStat.numWaiting should count the paused {big.gid}, got {stats}")
    summary["stats_paused"] = stats
    notifications.wait_for(api, "pause", big.gid, 1, args.timeout)
    summary["status_paused"] = big.status

    results = call(f"aria2.unpause({big.gid})", api.resume, [big])
    check(results == [True], f"api.resume([{big.gid}]) should give [True], got {[str(r) or repr(r) for r in results]}")
    wait_status(big, {"active"}, args, f"{big.gid} to be active again after unpause",
                allowed={"waiting", "paused"})
    notifications.wait_for(api, "start", big.gid, starts_before + 1, args.timeout)
    summary["status_resumed"] = big.status

    # 7. Per-download option while active.
    answer = call(f"aria2.changeOption({big.gid}, max-download-limit=1M)", api.client.change_option,
                  big.gid, {"max-download-limit": "1M"})
    check(answer == "OK", f"aria2.changeOption should answer \"OK\", got {answer!r}")
    options = call(f"aria2.getOption({big.gid})", api.client.get_option, big.gid)
    check(isinstance(options, dict), f"aria2.getOption should give an object, got {options!r}")
    check(all(isinstance(v, str) for v in options.values()),
          f"aria2.getOption: every value should be a string, got {options!r}")
    limit = options.get("max-download-limit")
    check(limit in ("1M", "1048576"),
          f"aria2.getOption({big.gid})['max-download-limit'] should be \"1048576\" (aria2c) or \"1M\", "
          f"got {limit!r}")
    check(same_path(options.get("dir", ""), directory),
          f"aria2.getOption({big.gid})['dir'] should be {directory}, got {options.get('dir')!r}")
    summary["option_max_download_limit"] = limit

    # 8. Global option.
    answer = call("aria2.changeGlobalOption(max-concurrent-downloads=3)", api.client.change_global_option,
                  {"max-concurrent-downloads": "3"})
    check(answer == "OK", f"aria2.changeGlobalOption should answer \"OK\", got {answer!r}")
    global_options = call("aria2.getGlobalOption", api.client.get_global_option)
    check(isinstance(global_options, dict), f"aria2.getGlobalOption should give an object, got {global_options!r}")
    check(all(isinstance(v, str) for v in global_options.values()),
          f"aria2.getGlobalOption: every value should be a string, got {global_options!r}")
    check(global_options.get("max-concurrent-downloads") == "3",
          f"aria2.getGlobalOption()['max-concurrent-downloads'] should be \"3\", "
          f"got {global_options.get('max-concurrent-downloads')!r}")
    summary["global_max_concurrent_downloads"] = global_options["max-concurrent-downloads"]

    # 9. Remove the big download (api.remove: aria2.remove, then aria2.removeDownloadResult).
    refresh(big, "before remove")
    results = call(f"aria2.remove({big.gid})", api.remove, [big])
    check(results == [True], f"api.remove([{big.gid}]) should give [True], got {[str(r) or repr(r) for r in results]}")

    def removed():
        try:
            struct = api.client.tell_status(big.gid)
        except aria2p.ClientException as error:
            removed.last = f"tellStatus error {error.code}: {error.message}"
            return "result-removed"  # aria2p's own removeDownloadResult got there first
        removed.last = json.dumps({k: struct.get(k) for k in ("gid", "status")})
        if struct.get("status") not in ("removed", "active", "waiting", "paused"):
            raise CheckFailed(f"after aria2.remove, {big.gid} has status {struct.get('status')!r}")
        return "removed" if struct.get("status") == "removed" else None
    removed.last = None
    outcome = wait_until(f"{big.gid} to be removed", removed, args.timeout)
    listed = gids_of(call("aria2.tellActive", api.client.tell_active), "aria2.tellActive") + \
        gids_of(call("aria2.tellWaiting(0, 100)", api.client.tell_waiting, 0, 100), "aria2.tellWaiting")
    check(big.gid not in listed, f"removed {big.gid} is still listed by tellActive/tellWaiting: {listed}")
    if outcome == "removed":
        stopped = gids_of(call("aria2.tellStopped(0, 100)", api.client.tell_stopped, 0, 100), "aria2.tellStopped")
        check(big.gid in stopped, f"{big.gid} has status removed but aria2.tellStopped does not list it: {stopped}")
    notifications.wait_for(api, "stop", big.gid, 1, args.timeout)
    summary["remove_outcome"] = outcome

    # 10. purgeDownloadResult.
    answer = call("aria2.purgeDownloadResult", api.client.purge_download_result)
    check(answer == "OK", f"aria2.purgeDownloadResult should answer \"OK\", got {answer!r}")
    stopped = gids_of(call("aria2.tellStopped(0, 100)", api.client.tell_stopped, 0, 100), "aria2.tellStopped")
    check(stopped == [], f"aria2.tellStopped should be empty after purgeDownloadResult, got {stopped}")
    stats = check_stats(api, "after purge")
    check(stats["num_stopped"] == 0, f"getGlobalStat.numStopped should be 0 after purge, got {stats}")
    summary["stats_purged"] = stats

    # 11. A wrong and a missing secret.
    rejected = {}
    for label, secret in (("wrong", args.secret + "-wrong"), ("missing", "")):
        if label == "missing" and args.secret == "":
            continue
        other = make_api(args, secret=secret)
        try:
            result = other.client.get_version()
        except aria2p.ClientException as error:
            check(isinstance(error.code, int), f"{label} secret: the error code should be an integer, "
                  f"got {error.code!r}")
            rejected[label] = {"code": error.code, "message": error.message}
        except (requests.RequestException, ValueError, KeyError) as error:
            raise CheckFailed(f"aria2.getVersion with a {label} secret: expected a JSON-RPC error "
                              f"object, aria2p failed with {error!r}") from error
        else:
            raise CheckFailed(f"aria2.getVersion with a {label} secret should fail, it answered {result!r}")
    summary["rejected_secret"] = rejected
    check_version(api)  # the right secret still works afterwards

    # 12. system.multicall, built by aria2p (it adds "token:S" to each inner call's params)...
    methods = [{"methodName": "aria2.getVersion", "params": []},
               {"methodName": "aria2.nosuch", "params": []}]
    result = call("system.multicall (aria2p inserts the tokens)", api.client.multicall, methods)
    summary["multicall"] = check_multicall(result, "system.multicall via api.client.multicall")
    # ... and with the tokens written by hand (insert_secret=False, else aria2p adds a second one).
    token = [f"token:{args.secret}"] if args.secret else []
    raw = [[{"methodName": "aria2.getVersion", "params": list(token)},
            {"methodName": "aria2.nosuch", "params": list(token)}]]
    result = call("system.multicall (tokens by hand)", api.client.call, "system.multicall", raw,
                  insert_secret=False)
    check_multicall(result, "system.multicall via api.client.call(insert_secret=False)")

    # 13. The notifications, once more, in one place.
    for kind, gid in (("start", big.gid), ("complete", small.gid), ("pause", big.gid), ("stop", big.gid)):
        check(notifications.count(kind, gid) >= 1, f"no aria2.onDownload{kind.capitalize()} for {gid}")
    check(notifications.count("start", big.gid) >= 2,
          f"expected two aria2.onDownloadStart for {big.gid} (add and unpause), got "
          f"{notifications.count('start', big.gid)}")
    check(notifications.count("error", big.gid) + notifications.count("error", small.gid) == 0,
          f"unexpected aria2.onDownloadError: {notifications.by_kind()['error']}")

    stop_listener(api, args, notifications)
    return summary


def check_multicall(result, what: str) -> dict:
    check(isinstance(result, list) and len(result) == 2,
          f"{what}: expected a list of 2 results, got {result!r}")
    first, second = result
    check(isinstance(first, list) and len(first) == 1 and isinstance(first[0], dict)
          and isinstance(first[0].get("version"), str)
          and isinstance(first[0].get("enabledFeatures"), list),
          f"{what}: result[0] should be [{{'version': ..., 'enabledFeatures': [...]}}], got {first!r}")
    check(isinstance(second, dict) and isinstance(second.get("code"), int)
          and isinstance(second.get("message"), str),
          f"{what}: result[1] (aria2.nosuch) should be a fault {{'code': int, 'message': str}}, got {second!r}")
    return {"ok": first[0]["version"], "fault": second}


def phase_start_restart(args) -> dict:
    for name in ("url", "dir", "state_file"):
        check(getattr(args, name), f"--phase start-restart needs --{name.replace('_', '-')}")
    api = make_api(args)
    check_version(api)
    download = call("aria2.addUri(url, {dir}) / tellStatus", api.add_uris, [args.url],
                    options={"dir": str(Path(args.dir))})
    check(GID_PATTERN.match(download.gid) is not None,
          f"aria2.addUri: the gid should be 16 lower-case hex digits, got {download.gid!r}")
    wait_status(download, {"active"}, args,
                f"{download.gid} to be active with completedLength >= {args.min_bytes}",
                allowed={"waiting"}, extra=lambda d: d.completed_length >= args.min_bytes)
    check(download.completed_length < download.total_length,
          f"{download.gid} finished before the restart ({describe(download)}); serve it slower")
    check_file_struct(download, download.gid)
    state = {"gid": download.gid, "completed": download.completed_length,
             "total_length": download.total_length, "path": str(download.files[0].path),
             "dir": str(download.dir)}
    Path(args.state_file).write_text(json.dumps(state) + "\n")
    return {"phase": "start-restart", **state, "status": download.status}


def phase_remove_figures(args) -> dict:
    for name in ("url", "dir", "size"):
        check(getattr(args, name), f"--phase remove-figures needs --{name.replace('_', '-')}")
    api = make_api(args)
    download = call("aria2.addUri(url, {dir}) / tellStatus", api.add_uris, [args.url],
                    options={"dir": str(Path(args.dir))})
    started = time.monotonic()

    def has_bytes():
        struct = call(f"aria2.tellStatus({download.gid})", api.client.tell_status, download.gid)
        check(struct.get("status") in ("active", "waiting"), f"{download.gid} became {struct.get('status')!r} before it was removed")
        return int(struct["completedLength"]) if int(struct["completedLength"]) >= args.min_bytes else None
    seen = wait_until(f"{download.gid} to have completedLength >= {args.min_bytes}", has_bytes, args.timeout, interval=0.02)
    check(seen < args.size, f"{download.gid} finished before it was removed; serve it slower")
    after = time.monotonic() - started
    answer = call(f"aria2.remove({download.gid})", api.client.remove, download.gid)
    check(answer == download.gid, f"aria2.remove should answer the gid, got {answer!r}")
    reads = []
    deadline = time.monotonic() + args.hold
    while time.monotonic() < deadline:
        status = call(f"aria2.tellStatus({download.gid})", api.client.tell_status, download.gid)
        stopped = [s for s in call("aria2.tellStopped(0, 100)", api.client.tell_stopped, 0, 100)
                   if s.get("gid") == download.gid]
        for where, struct in [("tellStatus", status)] + [("tellStopped", s) for s in stopped]:
            if struct.get("status") != "removed":
                continue
            completed, total = int(struct["completedLength"]), int(struct["totalLength"])
            reads.append((where, completed, total))
            check(completed >= seen and total == args.size,
                  f"{where} of removed {download.gid}: completedLength {completed}, totalLength {total}; "
                  f"before aria2.remove it had {seen} of {args.size} (reads so far: {reads[-5:]})")
        time.sleep(0.05)
    check(any(where == "tellStopped" for where, _, _ in reads),
          f"{download.gid} never appeared removed in tellStopped within {args.hold} s (reads: {reads[-5:]})")
    return {"phase": "remove-figures", "gid": download.gid, "before": seen, "removed_after": round(after, 3), "reads": len(reads),
            "last": reads[-1] if reads else None}


def phase_after_restart(args) -> dict:
    check(args.state_file, "--phase after-restart needs --state-file")
    check(args.sha256, "--phase after-restart needs --sha256")
    try:
        state = json.loads(Path(args.state_file).read_text())
        gid = state["gid"]
    except (OSError, ValueError, KeyError) as error:
        raise CheckFailed(f"cannot read the gid from --state-file {args.state_file}: {error!r}") from error
    api = make_api(args)
    summary: dict = {"phase": "after-restart", "gid": gid}

    # The server may still be starting: retry getVersion until it answers.
    def up():
        try:
            return api.client.get_version()
        except requests.exceptions.JSONDecodeError as error:
            raise CheckFailed(f"aria2.getVersion: the server's HTTP answer is not JSON ({error})") from error
        except requests.RequestException as error:
            up.last = repr(error)  # not listening yet: try again
            return None
        except aria2p.ClientException as error:
            raise CheckFailed(f"aria2.getVersion: the server answered with an error: code={error.code} "
                              f"message={error.message!r}") from error
    up.last = None
    wait_until("the restarted server to answer aria2.getVersion", up, args.timeout, interval=0.2)
    check_version(api)

    notifications = Notifications()
    start_listener(api, args, notifications)
    try:
        try:
            download = api.get_download(gid)
        except aria2p.ClientException as error:
            raise CheckFailed(f"after the restart the server does not know gid {gid}: code={error.code} "
                              f"message={error.message!r}") from error
        first = download.status
        summary["status_after_restart"] = first
        check(first in ("active", "waiting", "complete"),
              f"after the restart {gid} should be active (or waiting, or complete), got {describe(download)}")
        listed = [d.gid for d in call("api.get_downloads", api.get_downloads)]
        check(gid in listed, f"after the restart api.get_downloads() should list {gid}, listed {listed}")

        resumed_at = None

        def progress():
            nonlocal resumed_at
            refresh(download, "after restart")
            progress.last = describe(download)
            status = download.status
            if status not in ("active", "waiting", "complete"):
                raise CheckFailed(f"after the restart {gid} became {status!r}: {describe(download)}")
            if resumed_at is None and status in ("active", "complete") and download.completed_length > 0:
                resumed_at = download.completed_length
            return status == "complete"
        progress.last = None
        wait_until(f"{gid} to complete after the restart", progress, args.timeout)
        summary["first_completed_after_restart"] = resumed_at
        summary["completed_before_restart"] = state.get("completed")
        if args.require_resume:
            check(resumed_at is not None and resumed_at >= int(state.get("completed", 0)),
                  f"{gid} restarted from scratch: first completedLength after the restart was {resumed_at}, "
                  f"before it {state.get('completed')}")
        if first != "complete":
            notifications.wait_for(api, "complete", gid, 1, args.timeout)
        check_file_struct(download, gid)
        path = download.files[0].path
        if state.get("path"):
            check(same_path(path, state["path"]),
                  f"{gid}: files[0].path changed across the restart: {state['path']} -> {path}")
        total = as_int(f"{gid}: totalLength", lambda: download.total_length)
        check(download.completed_length == total, f"{gid}: complete but {describe(download)}")
        check(path.is_file(), f"{gid}: complete but there is no file at files[0].path {path}")
        size = path.stat().st_size
        check(size == total, f"{gid}: the file {path} has {size} bytes, totalLength is {total}")
        digest = sha256_of(path)
        check(digest == args.sha256.lower(), f"{gid}: SHA-256 of {path} is {digest}, expected {args.sha256.lower()}")
        summary.update({"status": download.status, "path": str(path), "total_length": total, "sha256": digest})
        stop_listener(api, args, notifications)
    finally:
        summary["notifications"] = notifications.by_kind()
        if api.listener is not None:
            api.client.stop_listening()
            api.listener.join(args.timeout)
    return summary


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Check an aria2-compatible JSON-RPC server with aria2p.")
    parser.add_argument("--phase", required=True, choices=("basic", "start-restart", "after-restart", "remove-figures"))
    parser.add_argument("--host", default="http://127.0.0.1", help="scheme and host, no port (aria2p's host)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", default="", help="the server's --rpc-secret")
    parser.add_argument("--url", help="big, slowly served file (basic, start-restart)")
    parser.add_argument("--url2", help="small file that completes at once (basic)")
    parser.add_argument("--dir", help="download directory given as the 'dir' option (absolute)")
    parser.add_argument("--size", type=int, help="expected totalLength of --url (optional)")
    parser.add_argument("--size2", type=int, help="expected size of --url2 (optional)")
    parser.add_argument("--state-file", help="where start-restart writes and after-restart reads the gid")
    parser.add_argument("--sha256", help="expected SHA-256 of --url's file (after-restart)")
    parser.add_argument("--min-bytes", type=int, default=1,
                        help="start-restart: wait until at least this many bytes arrived (default 1)")
    parser.add_argument("--require-resume", action="store_true",
                        help="after-restart: fail if the first completedLength seen after the restart is "
                             "below the one saved before it (i.e. the download started over)")
    parser.add_argument("--hold", type=float, default=3.0,
                        help="remove-figures: seconds to keep reading the removed download (default 3)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for each wait (default 60)")
    parser.add_argument("--rpc-timeout", type=float, default=15.0, help="seconds for one HTTP call (default 15)")
    parser.add_argument("--total-timeout", type=float,
                        help="hard limit for the whole run in seconds (default 6 x --timeout + 30)")
    parser.add_argument("--verbose", action="store_true", help="progress and aria2p's own log on stderr")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    total = args.total_timeout if args.total_timeout is not None else 6 * args.timeout + 30

    def watchdog() -> None:
        sys.stderr.write(f"FAIL: phase {args.phase}: the whole run exceeded {total:g} s (--total-timeout)\n")
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(total, watchdog)
    timer.daemon = True
    timer.start()
    if args.verbose:
        aria2p.enable_logger(level="DEBUG")
    phases = {"basic": phase_basic, "start-restart": phase_start_restart, "after-restart": phase_after_restart,
              "remove-figures": phase_remove_figures}
    try:
        summary = phases[args.phase](args)
        code = 0
    except CheckFailed as error:
        sys.stderr.write(f"FAIL: phase {args.phase}: {error}\n")
        code = 1
    except Exception:  # noqa: BLE001 - any other surprise is a failure too, with its traceback
        sys.stderr.write(f"FAIL: phase {args.phase}: unexpected error:\n{traceback.format_exc()}")
        code = 1
    if code == 0:
        sys.stdout.write(json.dumps({"ok": True, **summary}, sort_keys=True) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    timer.cancel()
    # Leave no thread behind (aria2p's listener thread is not a daemon).
    os._exit(code)


if __name__ == "__main__":
    main()
