#!/usr/bin/env python3
"""Drives the Haul dashboard in a real headless Chromium over the Chrome DevTools Protocol.

Launches its own chromium (fresh profile in a temp dir), opens --page, checks that a wrong
secret is refused, connects with --secret, adds --download-url, waits for it to be active with
progress, takes a screenshot, then pauses, resumes and removes it. With --live-figures it first
proves the row's figures come from the event stream (they change while no refresh ran); with
--complete-url and --dir it adds a download that completes, downloads its file through the
page's signed link (exact bytes), moves it with the inline form (the file is at the new place on
disk), and deletes it with its files after the confirmation listed them. Prints a one-line JSON
summary on stdout; exits 0 only when every step passed. Whatever happens, it kills the chromium
it started (its process group, by PID) and removes its temp dir; it never touches anything else.

Needs Python 3 and `websocket-client` (PyPI).
"""

import argparse
import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import websocket  # websocket-client
except ImportError:  # pragma: no cover
    sys.stderr.write("error: needs the websocket-client package (pip install websocket-client)\n")
    sys.exit(2)


class StepFailed(Exception):
    pass


class _Done(Exception):
    """A check that ends early with every step passed (--first-visit-active)."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


def log(msg):
    sys.stderr.write("[dashboard_check] %s\n" % msg)
    sys.stderr.flush()


class Chromium:
    """The chromium this script started: its process, profile dir and DevTools port."""

    def __init__(self, binary, deadline):
        self.tmp = tempfile.mkdtemp(prefix="dashboard-check-")
        self.profile = os.path.join(self.tmp, "profile")
        os.mkdir(self.profile)
        self.log_path = os.path.join(self.tmp, "chromium.log")
        self.proc = None
        self.port = None
        self.deadline = deadline
        self.binary = binary

    def start(self):
        binary = self.binary
        args = [
            binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,800",
            "--remote-debugging-port=0", "--user-data-dir=" + self.profile,
            "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-extensions", "--mute-audio",
            "about:blank",
        ]
        with open(self.log_path, "wb") as out:
            try:
                # start_new_session: chromium and its helpers get a process group of their own,
                # so cleanup can end exactly them.
                self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as e:
                raise StepFailed("launch chromium: cannot run %s: %s" % (binary, e))

    def log_tail(self, n=15):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def wait_port(self):
        path = os.path.join(self.profile, "DevToolsActivePort")
        while time.monotonic() < self.deadline:
            if os.path.exists(path):
                with open(path) as f:
                    first = f.readline().strip()
                if first.isdigit():
                    self.port = int(first)
                    return self.port
            if not self._running():
                raise StepFailed("launch chromium: it exited early:\n" + self.log_tail())
            time.sleep(0.1)
        raise StepFailed("launch chromium: no DevToolsActivePort after waiting:\n" + self.log_tail())

    @staticmethod
    def _stat(pid):
        """(state, pgrp) of a process, or None when it is gone."""
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return fields[0], int(fields[2])
        except (OSError, IndexError, ValueError):
            return None

    def _running(self):
        # The leader is never reaped before close(), so a dead one shows up as a zombie.
        st = self._stat(self.proc.pid)
        return st is not None and st[0] not in ("Z", "X")

    def _group_members(self, pgid):
        """Live (non-zombie) processes in process group pgid."""
        members = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                st = self._stat(int(name))
                if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
                    members.append(int(name))
        return members

    def page_ws_url(self):
        url = "http://127.0.0.1:%d/json" % self.port
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
        last = None
        while time.monotonic() < self.deadline:
            try:
                with opener.open(url, timeout=5) as r:
                    targets = json.load(r)
                for t in targets:
                    if t.get("type") == "page" and t.get("webSocketDebuggerUrl"):
                        return t["webSocketDebuggerUrl"]
                last = "no page target in %s" % url
            except OSError as e:
                last = str(e)
            time.sleep(0.2)
        raise StepFailed("find page target: %s" % last)

    def close(self):
        if self.proc is not None:
            # chromium was started with start_new_session, so its PID is its process group.
            # The leader stays unreaped (at worst a zombie) until the signals are sent, so the
            # group id cannot have been reused by anything else.
            pgid = self.proc.pid
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if not self._group_members(pgid):
                    break
                try:
                    os.killpg(pgid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                end = time.monotonic() + 5.0
                while time.monotonic() < end and self._group_members(pgid):
                    time.sleep(0.1)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        for _ in range(20):
            shutil.rmtree(self.tmp, ignore_errors=True)
            if not os.path.exists(self.tmp):
                break
            time.sleep(0.1)


class CDP:
    """A minimal Chrome DevTools Protocol client over one page target's WebSocket."""

    def __init__(self, ws_url):
        self.ws = websocket.create_connection(ws_url, timeout=10, suppress_origin=True)
        self.next_id = 0
        self.exceptions = []
        self.console_errors = []

    def _event(self, msg):
        method = msg.get("method")
        params = msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            text = (d.get("exception") or {}).get("description") or d.get("text", "")
            self.exceptions.append(text)
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = params.get("args", [])
            self.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))
        elif method == "Log.entryAdded":
            e = params.get("entry", {})
            if e.get("level") == "error":
                self.console_errors.append(e.get("text", ""))

    def send(self, method, params=None, timeout=15):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise StepFailed("CDP %s: no answer in %.0fs" % (method, timeout))
            self.ws.settimeout(left)
            try:
                msg = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                continue
            except (websocket.WebSocketException, OSError) as e:
                raise StepFailed("CDP %s: connection to chromium lost: %s" % (method, e))
            if msg.get("id") == mid:
                if "error" in msg:
                    raise StepFailed("CDP %s: %s" % (method, msg["error"].get("message")))
                return msg.get("result", {})
            if "method" in msg:
                self._event(msg)

    def eval(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True, "userGesture": True})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            text = (d.get("exception") or {}).get("description") or d.get("text")
            raise StepFailed("page script failed: %s\n  in: %s" % (text, expression[:200]))
        return r.get("result", {}).get("value")

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass


# Page-side helpers, installed once after navigation.
HELPERS = r"""
window.__chk = {
  set(sel, value) {
    const e = document.querySelector(sel);
    if (!e) throw new Error("no element " + sel);
    e.focus(); e.value = value;
    e.dispatchEvent(new Event("input", {bubbles: true}));
    e.dispatchEvent(new Event("change", {bubbles: true}));
    return true;
  },
  click(sel) {
    const e = document.querySelector(sel);
    if (!e) throw new Error("no element " + sel);
    if (e.hidden || e.closest("[hidden]")) throw new Error(sel + " is hidden");
    if (e.disabled) throw new Error(sel + " is disabled");
    e.click();
    return true;
  },
  text(sel) { const e = document.querySelector(sel); return e ? e.textContent.trim() : null; },
  gids() { return [...document.querySelectorAll("#downloads tr[data-gid]")].map(r => r.getAttribute("data-gid")); },
  row(gid) {
    const r = document.querySelector('#downloads tr[data-gid="' + CSS.escape(gid) + '"]');
    if (!r) return null;
    const q = s => r.querySelector(s);
    const btn = s => { const b = q(s); return b ? {present: true, hidden: b.hidden || b.hasAttribute("hidden")} : {present: false, hidden: true}; };
    const p = q(".progress");
    return {
      gid,
      name: q(".name") ? q(".name").textContent.trim() : null,
      state: q(".state") ? q(".state").textContent.trim() : null,
      percent: p ? parseInt(p.getAttribute("data-percent") || p.getAttribute("value") || "NaN", 10) : null,
      progressText: p ? (p.parentElement.textContent || "").trim() : null,
      speed: q(".speed") ? q(".speed").textContent.trim() : null,
      eta: q(".eta") ? q(".eta").textContent.trim() : null,
      pause: btn(".pause"), resume: btn(".resume"), remove: btn(".remove"),
    };
  },
};
true;
"""


def row_sel(gid):
    return '#downloads tr[data-gid="%s"]' % gid


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_actions(cdp, browser, args, summary, wait_for, seen_row):
    """Download, move and delete-with-files of a complete download, checked on disk."""
    summary["file_step"] = "complete download"
    old = set(cdp.eval("__chk.gids()") or [])
    cdp.eval("__chk.set('#add-url', %s) && __chk.set('#add-out', 'done.bin') && __chk.click('#add-button')"
             % json.dumps(args.complete_url))
    new = wait_for("complete download: a new row",
                   lambda: [g for g in (cdp.eval("__chk.gids()") or []) if g not in old],
                   lambda v: isinstance(v, list) and len(v) > 0)
    gid = new[0]
    first = os.path.join(args.dir, "done.bin")
    wait_for("complete download %s: state 'complete' and its file on disk" % gid,
             lambda: seen_row(gid), lambda r: r is not None and r["state"] == "complete" and os.path.exists(first))
    if sha256_file(first) != args.complete_sha256:
        raise StepFailed("complete download: %s does not have the served bytes" % first)
    summary["file_gid"] = gid

    summary["file_step"] = "download file"
    downloads = os.path.join(browser.tmp, "downloads")
    os.mkdir(downloads)
    try:
        cdp.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    except StepFailed:
        cdp.send("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    cdp.eval("__chk.click(%s)" % json.dumps(row_sel(gid) + " .file"))
    href = wait_for("download file: #file-link set to this download's signed link",
                    lambda: cdp.eval("(() => { const a = document.querySelector('#file-link'); "
                                     "return a && !a.closest('[hidden]') ? a.href : null; })()"),
                    lambda v: bool(v) and ("/haul/file/" + gid + "?") in v and "signature=" in v)
    saved = os.path.join(downloads, "done.bin")
    wait_for("download file: the browser saved done.bin", lambda: os.path.exists(saved), bool)
    wait_for("download file: the browser's copy has the served bytes",
             lambda: sha256_file(saved), lambda h: h == args.complete_sha256)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(href, timeout=10) as r:
        body = r.read()
    if hashlib.sha256(body).hexdigest() != args.complete_sha256:
        raise StepFailed("download file: %s answered %d bytes that are not the file's" % (href, len(body)))
    summary["downloaded_bytes"] = len(body)
    log("download file: %s, %d bytes, exact (browser and link)" % (href, len(body)))

    summary["file_step"] = "move"
    cdp.eval("__chk.click(%s)" % json.dumps(row_sel(gid) + " .move"))
    wait_for("move: the inline form is shown", lambda: cdp.eval("!document.querySelector('#move-form').hidden"), bool)
    cdp.eval("__chk.set('#move-dir', 'moved') && __chk.set('#move-out', 'renamed.bin') && __chk.click('#move-submit')")
    moved = os.path.join(args.dir, "moved", "renamed.bin")
    wait_for("move: the file at %s and none at %s" % (moved, first),
             lambda: {"new": os.path.exists(moved), "old": os.path.exists(first),
                      "message": cdp.eval("__chk.text('#message')")},
             lambda v: v["new"] and not v["old"])
    if sha256_file(moved) != args.complete_sha256:
        raise StepFailed("move: %s does not have the served bytes" % moved)
    wait_for("move: the row shows the new name", lambda: seen_row(gid),
             lambda r: r is not None and "renamed.bin" in (r["name"] or ""))
    log("move: %s -> %s" % (first, moved))

    summary["file_step"] = "delete with files"
    cdp.eval("__chk.click(%s)" % json.dumps(row_sel(gid) + " .delete-files"))
    listed = wait_for("delete with files: the confirmation lists the file",
                      lambda: cdp.eval("(() => { const p = document.querySelector('#confirm-delete'); "
                                       "return p && !p.hidden ? p.querySelector('#confirm-delete-files').textContent : null; })()"),
                      lambda v: bool(v) and moved in v)
    if not os.path.exists(moved) or seen_row(gid) is None:
        raise StepFailed("delete with files: the confirmation alone deleted something")
    cdp.eval("__chk.click('#confirm-delete-yes')")
    done = wait_for("delete with files: the result lists the file deleted, and it is gone from disk",
                    lambda: {"deleted": cdp.eval("(() => { const p = document.querySelector('#delete-result'); "
                                                 "return p && !p.hidden ? p.querySelector('#delete-result-deleted').textContent : null; })()"),
                             "on_disk": os.path.exists(moved), "message": cdp.eval("__chk.text('#message')")},
                    lambda v: bool(v["deleted"]) and moved in v["deleted"] and not v["on_disk"])
    wait_for("delete with files: the row is gone", lambda: seen_row(gid), lambda r: r is None)
    summary["confirmation"] = listed
    log("delete with files: confirmation %r; deleted %r" % (listed, done["deleted"]))


def main():
    ap = argparse.ArgumentParser(description="Drive the Haul dashboard in headless Chromium.")
    ap.add_argument("--page", required=True, help="dashboard URL, possibly with ?rpc=ws://...")
    ap.add_argument("--secret", help="the RPC secret (required unless --first-visit-active)")
    ap.add_argument("--download-url", help="a URL to add (served slowly; required unless --first-visit-active)")
    ap.add_argument("--screenshot", help="PNG path for the screenshot (required unless --first-visit-active)")
    ap.add_argument("--first-visit-active", type=int, default=None, metavar="N",
                    help="only check a first visit to a server without a secret: with no click, #status "
                         "says connected and N downloads are listed active (#empty hidden)")
    ap.add_argument("--stream-blocked", action="store_true",
                    help="with --first-visit-active: the browser blocks /haul/events, and the rows must "
                         "still move by polling (the fallback)")
    ap.add_argument("--file-needs-secret", metavar="GID",
                    help="with --first-visit-active (a server without --secret): GID's Download says why "
                         "it is not offered, and no link is made")
    ap.add_argument("--live-figures", action="store_true",
                    help="check that the active row's figures arrive by the event stream, polling slowed")
    ap.add_argument("--complete-url", help="a URL that completes quickly, for the file actions (needs --dir)")
    ap.add_argument("--complete-sha256", help="the SHA-256 of --complete-url's bytes")
    ap.add_argument("--dir", help="the server's download directory (-d), to check the files on disk")
    ap.add_argument("--chromium", default="/usr/bin/chromium", help="chromium binary")
    ap.add_argument("--timeout", type=float, default=60.0, help="overall time limit in seconds")
    args = ap.parse_args()
    if args.first_visit_active is None and not (args.secret and args.download_url and args.screenshot):
        ap.error("--secret, --download-url and --screenshot are required unless --first-visit-active")
    if args.complete_url and not (args.dir and args.complete_sha256):
        ap.error("--complete-url needs --dir and --complete-sha256")

    deadline = time.monotonic() + args.timeout
    summary = {"ok": False, "step": None, "gid": None, "states_seen": [],
               "percent_at_screenshot": None, "wrong_secret_status": None, "status": None,
               "screenshot": None}
    browser = None
    cdp = None
    step = "start"

    def on_signal(signum, _frame):
        raise KeyboardInterrupt("signal %d" % signum)

    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)

    def remaining():
        return deadline - time.monotonic()

    def wait_for(what, probe, ok, interval=0.2):
        """Polls probe() until ok(value); fails with the last value seen."""
        last = None
        while True:
            last = probe()
            if ok(last):
                return last
            if remaining() <= 0:
                raise StepFailed("%s: timed out; last seen: %s" % (what, json.dumps(last)))
            time.sleep(interval)

    def seen_row(gid):
        r = cdp.eval("__chk.row(%s)" % json.dumps(gid))
        if r and r.get("state") and (not summary["states_seen"] or summary["states_seen"][-1] != r["state"]):
            summary["states_seen"].append(r["state"])
        return r

    exit_code = 1
    try:
        step = "launch chromium"
        browser = Chromium(args.chromium, deadline)
        browser.start()
        browser.wait_port()
        cdp = CDP(browser.page_ws_url())
        cdp.send("Runtime.enable")
        cdp.send("Log.enable")
        cdp.send("Page.enable")
        if args.stream_blocked:
            # Every request to the event stream fails in the browser (net::ERR_BLOCKED_BY_CLIENT).
            cdp.send("Network.enable")
            cdp.send("Network.setBlockedURLs", {"urls": ["*/haul/events*"]})
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": 1200, "height": 800, "deviceScaleFactor": 1, "mobile": False})

        step = "open page"
        nav = cdp.send("Page.navigate", {"url": args.page})
        if nav.get("errorText"):
            raise StepFailed("open page %s: %s" % (args.page, nav["errorText"]))
        wait_for("open page (document ready with #secret, #connect, #downloads)",
                 lambda: cdp.eval("document.readyState === 'complete' && !!document.querySelector('#secret')"
                                  " && !!document.querySelector('#connect') && !!document.querySelector('#downloads')"
                                  " && !!document.querySelector('#status')"),
                 bool)
        cdp.eval(HELPERS)

        if args.first_visit_active is not None:
            step = "first visit"
            # No click: the page connects by itself and lists what runs.
            def first_visit():
                rows = [cdp.eval("__chk.row(%s)" % json.dumps(g)) for g in (cdp.eval("__chk.gids()") or [])]
                return {"status": cdp.eval("__chk.text('#status')"),
                        "active": len([r for r in rows if r and r["state"] == "active"]),
                        "empty_hidden": cdp.eval("(() => { const e = document.querySelector('#empty'); "
                                                 "return !e || e.hidden || getComputedStyle(e).display === 'none'; })()")}
            seen = wait_for("first visit: connected with %d active rows, without a click" % args.first_visit_active,
                            first_visit,
                            lambda v: (v["status"] or "").startswith("connected")
                            and v["active"] >= args.first_visit_active and v["empty_hidden"])
            summary["status"] = seen["status"]
            summary["states_seen"] = ["active"] * seen["active"]
            log("first visit -> %s" % json.dumps(seen))
            if args.stream_blocked:
                step = "stream blocked: polling takes over"
                # The page tried the stream (it fails), says so, and the rows still move: by
                # refreshes (the counter grows), with no stream event counted.
                wait_for("stream blocked: the page says live figures are off or reconnecting",
                         lambda: {"stream": cdp.eval("document.body.getAttribute('data-stream')"),
                                  "live": cdp.eval("__chk.text('#live')")},
                         lambda v: v["stream"] != "open" and v["live"] is not None
                         and ("polling" in v["live"]))
                gids = cdp.eval("__chk.gids()") or []
                first_texts = {g: (cdp.eval("__chk.row(%s)" % json.dumps(g)) or {}).get("progressText") for g in gids}
                refreshes0 = int(cdp.eval("document.body.getAttribute('data-refreshes')") or "0")
                moved = wait_for("stream blocked: a row's figures change by polling",
                                 lambda: [g for g in gids if (cdp.eval("__chk.row(%s)" % json.dumps(g)) or {}).get("progressText")
                                          not in (None, first_texts[g])],
                                 lambda v: len(v) > 0)
                refreshes = int(cdp.eval("document.body.getAttribute('data-refreshes')") or "0")
                events = int(cdp.eval("document.body.getAttribute('data-stream-events')") or "0")
                if refreshes <= refreshes0 or events != 0:
                    raise StepFailed("stream blocked: refreshes %d -> %d, stream events %d" % (refreshes0, refreshes, events))
                summary["fallback"] = {"refreshes": refreshes - refreshes0, "moved": moved,
                                       "live": cdp.eval("__chk.text('#live')")}
                log("stream blocked: %s" % json.dumps(summary["fallback"]))
            if args.file_needs_secret:
                step = "download needs a secret"
                gid = args.file_needs_secret
                wait_for("download needs a secret: %s listed complete" % gid,
                         lambda: cdp.eval("__chk.row(%s)" % json.dumps(gid)),
                         lambda r: r is not None and r["state"] == "complete")
                cdp.eval("__chk.click(%s)" % json.dumps(row_sel(gid) + " .file"))
                said = wait_for("download needs a secret: #message says why",
                                lambda: cdp.eval("__chk.text('#message')"),
                                lambda m: bool(m) and "--secret" in m)
                if not cdp.eval("document.querySelector('#file-box').hidden"):
                    raise StepFailed("download needs a secret: a file link was made anyway")
                summary["file_needs_secret"] = said
                log("download needs a secret: %r" % said)
            if cdp.exceptions:
                raise StepFailed("page threw: %s" % "; ".join(cdp.exceptions))
            step = "done"
            summary["ok"] = True
            return_code_first_visit = 0
            raise _Done(return_code_first_visit)

        step = "first visit asks for the secret"
        st = wait_for("first visit to a server with a secret: #status asks for it, without a click",
                      lambda: cdp.eval("__chk.text('#status')"),
                      lambda s: s is not None and s.startswith("error") and "secret" in s)
        log("first visit -> %r" % st)

        step = "wrong secret"
        before = cdp.eval("__chk.text('#status')")
        cdp.eval("__chk.set('#secret', %s) && __chk.click('#connect')" % json.dumps("wrong-" + args.secret))
        st = wait_for("wrong secret gives #status 'error...' (was %r)" % before,
                      lambda: cdp.eval("__chk.text('#status')"),
                      lambda s: s is not None and s.startswith("error"))
        summary["wrong_secret_status"] = st
        log("wrong secret -> %r" % st)

        step = "connect"
        cdp.eval("__chk.set('#secret', %s) && __chk.click('#connect')" % json.dumps(args.secret))
        st = wait_for("connect: #status starts with 'connected'",
                      lambda: cdp.eval("__chk.text('#status')"),
                      lambda s: s is not None and s.startswith("connected"))
        summary["status"] = st
        log("status -> %r" % st)

        step = "add download"
        # Let the list settle (same rows on two polls a refresh apart) so that rows already
        # there are not mistaken for the new one.
        prev = [None]

        def settled():
            now = sorted(cdp.eval("__chk.gids()") or [])
            same = now == prev[0]
            prev[0] = now
            return now if same else None

        old = set(wait_for("add download: the list settles before adding", settled,
                           lambda v: v is not None, interval=1.1))
        cdp.eval("__chk.set('#add-url', %s) && __chk.click('#add-button')" % json.dumps(args.download_url))
        new = wait_for("add download: a new row in #downloads (message: see last value)",
                       lambda: [g for g in (cdp.eval("__chk.gids()") or []) if g not in old]
                       or {"message": cdp.eval("__chk.text('#message')")},
                       lambda v: isinstance(v, list) and len(v) > 0)
        gid = new[0]
        summary["gid"] = gid
        log("new row gid=%s" % gid)

        step = "active with progress"
        r = wait_for("download %s active with data-percent > 0" % gid,
                     lambda: seen_row(gid),
                     lambda r: r is not None and r["state"] == "active" and (r["percent"] or 0) > 0)
        log("active: %s" % json.dumps(r))

        if args.live_figures:
            step = "live figures"
            # The stream is open and polling slowed to its 10 s safety net: the row's figures
            # must change at least three times with no refresh in between (so only the stream's
            # haul.progress events can have changed them), and the page's counter of stream
            # events must grow meanwhile.
            wait_for("live figures: the event stream is open",
                     lambda: cdp.eval("document.body.getAttribute('data-stream')"), lambda v: v == "open")

            def counter(name):
                return int(cdp.eval("document.body.getAttribute(%s)" % json.dumps(name)) or "0")

            base_refreshes = counter("data-refreshes")
            base_events = counter("data-stream-events")
            texts = []
            while True:
                now = counter("data-refreshes")
                r = seen_row(gid)
                if now != base_refreshes:
                    base_refreshes, base_events, texts = now, counter("data-stream-events"), []
                elif r and r["state"] == "active" and (not texts or texts[-1] != r["progressText"]):
                    texts.append(r["progressText"])
                events_seen = counter("data-stream-events") - base_events
                listed = cdp.eval("__chk.gids()") or []
                if len(listed) != len(set(listed)):
                    raise StepFailed("live figures: a GID listed twice: %s" % json.dumps(listed))
                if len(texts) >= 4 and events_seen >= 3:
                    break
                if remaining() <= 0:
                    raise StepFailed("live figures: no three changes between refreshes; texts %s, stream events %d"
                                     % (json.dumps(texts), events_seen))
                time.sleep(0.1)
            summary["live_figures"] = {"texts": texts, "stream_events": events_seen,
                                       "refreshes": base_refreshes}
            log("live figures: %s changed by %d stream events, no refresh (refreshes stayed %d)"
                % (json.dumps(texts), events_seen, base_refreshes))

        step = "screenshot"
        # Give the bar a moment to fill visibly (and the speed to settle) before the picture,
        # at most 2.5 s, while the download stays active.
        settle_end = min(time.monotonic() + 2.5, deadline)
        while time.monotonic() < settle_end:
            r = seen_row(gid)
            if not r or r["state"] != "active" or (r["percent"] or 0) >= 3:
                break
            time.sleep(0.25)
        shot = cdp.send("Page.captureScreenshot", {"format": "png"}, timeout=30)
        data = base64.b64decode(shot["data"])
        d = os.path.dirname(os.path.abspath(args.screenshot))
        os.makedirs(d, exist_ok=True)
        with open(args.screenshot, "wb") as f:
            f.write(data)
        r = seen_row(gid)
        summary["percent_at_screenshot"] = r["percent"] if r else None
        summary["screenshot"] = args.screenshot
        if not r or r["state"] != "active":
            raise StepFailed("screenshot: download was no longer active: %s" % json.dumps(r))
        log("screenshot %s (%d bytes) at %s%%" % (args.screenshot, len(data), r["percent"]))

        step = "pause"
        cdp.eval("__chk.click(%s)" % json.dumps(row_sel(gid) + " .pause"))
        r = wait_for("pause: state 'paused' with .resume shown and .pause hidden",
                     lambda: seen_row(gid),
                     lambda r: r is not None and r["state"] == "paused"
                     and r["resume"]["present"] and not r["resume"]["hidden"] and r["pause"]["hidden"])

        step = "resume"
        cdp.eval("__chk.click(%s)" % json.dumps(row_sel(gid) + " .resume"))
        r = wait_for("resume: state 'active' or 'complete'",
                     lambda: seen_row(gid),
                     lambda r: r is not None and r["state"] in ("active", "complete"))

        step = "remove"
        cdp.eval("__chk.click(%s)" % json.dumps(row_sel(gid) + " .remove"))
        r = wait_for("remove: row gone or state 'removed'",
                     lambda: seen_row(gid),
                     lambda r: r is None or r["state"] == "removed")

        if args.complete_url:
            step = "file actions (see file_step)"
            file_actions(cdp, browser, args, summary, wait_for, seen_row)

        step = "secret stays home"
        # The secret this tab saved goes back only to the endpoint it was given to: the same tab
        # opened with ?rpc= naming another loopback port (another local process) connects on
        # load with none.
        elsewhere = args.page + ("&" if "?" in args.page else "?") + "rpc=ws://127.0.0.1:9/jsonrpc"
        nav = cdp.send("Page.navigate", {"url": elsewhere})
        if nav.get("errorText"):
            raise StepFailed("open page %s: %s" % (elsewhere, nav["errorText"]))
        seen = wait_for("the page with ?rpc= elsewhere loaded, its endpoint shown",
                        lambda: cdp.eval("document.readyState === 'complete' && (document.querySelector('#endpoint')||{}).textContent"),
                        lambda v: bool(v) and "127.0.0.1:9/" in v)
        secret_there = cdp.eval("document.querySelector('#secret').value")
        if secret_there:
            raise StepFailed("the saved secret was filled in (and sent) for another endpoint: %r" % secret_there)
        log("secret stays home: %s connects with none" % seen)

        step = "page errors"
        if cdp.exceptions:
            raise StepFailed("page threw: %s" % "; ".join(cdp.exceptions))

        step = "done"
        summary["ok"] = True
        exit_code = 0
    except _Done as done:
        exit_code = done.code
    except StepFailed as e:
        log("FAILED at step '%s': %s" % (step, e))
        if cdp is not None:
            try:
                log("  #status=%r #message=%r" % (cdp.eval("(document.querySelector('#status')||{}).textContent"),
                                                  cdp.eval("(document.querySelector('#message')||{}).textContent")))
            except Exception:
                pass
            if cdp.exceptions:
                log("  page exceptions: %s" % cdp.exceptions)
            if cdp.console_errors:
                log("  console errors: %s" % cdp.console_errors[-5:])
    except KeyboardInterrupt as e:
        log("interrupted at step '%s' (%s)" % (step, str(e) or "Ctrl-C"))
        exit_code = 130
    except Exception as e:  # unexpected: still clean up and report
        log("FAILED at step '%s': unexpected %s: %s" % (step, type(e).__name__, e))
    finally:
        # Ignore further signals while cleaning up so that cleanup always completes.
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        summary["step"] = step
        if cdp is not None:
            summary["page_exceptions"] = cdp.exceptions
            cdp.close()
        if browser is not None:
            browser.close()
        print(json.dumps(summary, separators=(",", ":")))
        sys.stdout.flush()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
