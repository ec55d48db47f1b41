#!/usr/bin/env python3
"""Hostile checks of the Haul dashboard's new actions in a real headless Chromium.

Unlike dashboard_check.py (which drives a `haul serve` it is given), this script starts its own
`haul serve` (--haul, with --secret on a loopback port it picks), because one step kills it with
SIGKILL and starts it again on the same port. Steps (each may be chosen with --steps):

- restart: with a download running and the page's event stream open, `haul serve` is killed -9
  and, 8 s later, started again on the same port with the same store: the page must reconnect by
  itself, the figures must move again from the event stream, the download must have one row, one
  EventSource must be open, and the page must not storm the server (requests to /haul/events and
  WebSocket handshakes counted by the DevTools protocol, while down and after);
- secret: no page URL in the history carries the secret or a token, haul serve printed neither,
  and the file link's request carries no Referer;
- gone: a complete download whose file was deleted on disk: Download must leave the page where it
  is (not navigate to the server's plain-text refusal) and say why in #message;
- hostile: a file name with quotes and an attribute-like text, and move/add errors carrying HTML,
  quotes, newlines, a right-to-left override (written out as ⟨U+202E⟩) and 10 KB: shown as text, nothing executed or
  injected; a double click on the confirmation sends one removal only;
- swap: between the confirmation's list and Yes, another file takes the listed file's name: the
  result must list it kept (with the reason), and it must stay on disk untouched;
- foreign: this server's page opened with `?rpc=` pointing at another local process that wants a
  secret: the page must say that endpoint is not the server it came from before anyone types one.
- refused: the page's event stream answered 503 (as haul serve answers at its bound of streams;
  here the DevTools protocol answers for it), for 7 s: the page must poll meanwhile, try the stream
  again by itself with a growing wait (no storm), and open it once the server takes it again,
  without a reload.

Prints a one-line JSON summary on stdout; exits 0 only when every step passed. Whatever happens, it
kills the chromium and the haul serve it started (by PID) and removes its temp dir.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dashboard_check import CDP, HELPERS, Chromium, StepFailed, log, row_sel  # noqa: E402


class CountingCDP(CDP):
    """CDP that also counts the page's network requests of interest."""

    def __init__(self, ws_url):
        super().__init__(ws_url)
        self.events_requests = 0
        self.websockets = 0
        self.file_requests = []
        self.frames_sent = []
        # While true, every /haul/events request paused by the Fetch domain is answered 503.
        self.refuse_events = False
        self.refused = 0

    def _reply(self, method, params):
        # Sent from inside the read loop: its answer (an id nobody waits for) is dropped there.
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))

    def _event(self, msg):
        super()._event(msg)
        method = msg.get("method")
        params = msg.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if "/haul/events" in url:
                self.events_requests += 1
            if "/haul/file/" in url:
                self.file_requests.append(params.get("request", {}))
        elif method == "Fetch.requestPaused":
            if self.refuse_events and "/haul/events" in params.get("request", {}).get("url", ""):
                self.refused += 1
                self._reply("Fetch.fulfillRequest", {
                    "requestId": params["requestId"], "responseCode": 503,
                    "responseHeaders": [{"name": "Content-Type", "value": "text/plain"}, {"name": "Retry-After", "value": "1"}],
                    "body": "c2VydmVyIGJ1c3k="})  # "server busy"
            else:
                self._reply("Fetch.continueRequest", {"requestId": params["requestId"]})
        elif method == "Network.webSocketCreated":
            self.websockets += 1
        elif method == "Network.webSocketFrameSent":
            self.frames_sent.append(params.get("response", {}).get("payloadData", ""))

    def pump(self, seconds):
        """Reads events for `seconds` (counters only move while something reads the socket)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.eval("1")
            time.sleep(0.1)


# Tracks the EventSources the page made and has not closed.
TRACK = r"""
(() => {
  const ES = window.EventSource;
  if (!ES) return;
  window.__live = new Set();
  const Tracked = function (url, options) {
    const e = new ES(url, options);
    window.__live.add(e);
    const close = e.close.bind(e);
    e.close = function () { window.__live.delete(e); close(); };
    return e;
  };
  Tracked.prototype = ES.prototype;
  Tracked.CONNECTING = ES.CONNECTING; Tracked.OPEN = ES.OPEN; Tracked.CLOSED = ES.CLOSED;
  window.EventSource = Tracked;
})();
"""


class Serve:
    """The haul serve this script runs (and kills, and runs again on the same port)."""

    def __init__(self, binary, secret, state, directory, tmp, extra=()):
        self.binary, self.secret, self.state, self.directory, self.tmp = binary, secret, state, directory, tmp
        self.extra = list(extra)
        self.proc = None
        self.port = 0
        self.runs = 0
        self.stderr_paths = []

    def start(self, deadline):
        self.runs += 1
        path = os.path.join(self.tmp, "serve-%d.err" % self.runs)
        self.stderr_paths.append(path)
        argv = [self.binary, "serve", "--listen", "127.0.0.1:%d" % self.port, "--secret", self.secret,
                "--state", self.state, "-d", self.directory, "-x", "1"] + self.extra
        with open(path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        while time.monotonic() < deadline:
            with open(path, errors="replace") as f:
                m = re.search(r"127\.0\.0\.1:([0-9]+)", f.read())
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                raise StepFailed("haul serve exited: " + open(path, errors="replace").read()[-500:])
            time.sleep(0.05)
        raise StepFailed("haul serve did not say where it listens")

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None

    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def call(self, method, params):
        body = json.dumps({"jsonrpc": "2.0", "id": "a", "method": method,
                           "params": ["token:" + self.secret] + params}).encode()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        req = urllib.request.Request(self.base() + "/jsonrpc", data=body, headers={"Content-Type": "application/json"})
        with opener.open(req, timeout=10) as r:
            reply = json.load(r)
        if "error" in reply:
            raise StepFailed("%s: %s" % (method, reply["error"]))
        return reply["result"]

    def stderr_text(self):
        text = ""
        for path in self.stderr_paths:
            with open(path, errors="replace") as f:
                text += f.read()
        return text


def main():
    ap = argparse.ArgumentParser(description="Hostile checks of the Haul dashboard in headless Chromium.")
    ap.add_argument("--haul", required=True, help="the haul binary")
    ap.add_argument("--work", required=True, help="a scratch directory (state, downloads, logs)")
    ap.add_argument("--slow-url", required=True, help="a URL served slowly (a download that keeps running)")
    ap.add_argument("--small-url", required=True, help="a URL that completes at once")
    ap.add_argument("--steps", default="restart,secret,gone,hostile,swap,foreign,refused")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--timeout", type=float, default=150.0)
    args = ap.parse_args()
    steps = args.steps.split(",")
    deadline = time.monotonic() + args.timeout
    secret = "attack-s3cret-%d" % os.getpid()
    # With the hostile step, the server's directory (-d) holds a right-to-left override: every path
    # the page shows has it, and must show it written out.
    directory = os.path.join(args.work, "dl \u202egnp" if "hostile" in steps else "dl")
    os.makedirs(directory, exist_ok=True)
    serve = Serve(args.haul, secret, os.path.join(args.work, "state"), directory, args.work)
    summary = {"ok": False, "step": None, "passed": []}
    browser = cdp = None
    step = "start"

    def remaining():
        return deadline - time.monotonic()

    def wait_for(what, probe, ok, interval=0.2, within=None):
        end = time.monotonic() + within if within else deadline
        last = None
        while True:
            last = probe()
            if ok(last):
                return last
            if time.monotonic() > min(end, deadline):
                raise StepFailed("%s: timed out; last seen: %s" % (what, json.dumps(last)[:2000]))
            time.sleep(interval)

    def page_state():
        return cdp.eval("({status: (document.querySelector('#status')||{}).textContent, "
                        "stream: document.body.getAttribute('data-stream'), "
                        "refreshes: +document.body.getAttribute('data-refreshes'), "
                        "streamEvents: +document.body.getAttribute('data-stream-events'), "
                        "gids: __chk.gids(), live: window.__live ? window.__live.size : -1, "
                        "path: location.pathname, message: (document.querySelector('#message')||{}).textContent})")

    def figures_move_by_stream(gid, what):
        """The row's progress text changes twice while no refresh runs (only the stream moved it)."""
        first = page_state()
        texts = [cdp.eval("__chk.row(%s).progressText" % json.dumps(gid))]

        def probe():
            s = page_state()
            t = cdp.eval("(__chk.row(%s)||{}).progressText" % json.dumps(gid))
            if t and t != texts[-1]:
                texts.append(t)
            return {"changes": len(texts) - 1, "refreshes": s["refreshes"], "streamEvents": s["streamEvents"], "texts": texts[-3:]}
        v = wait_for(what, probe, lambda v: v["changes"] >= 2, within=20)
        if v["streamEvents"] <= first["streamEvents"]:
            raise StepFailed("%s: the figures moved with no stream event (%s)" % (what, v))
        return v

    exit_code = 1
    try:
        step = "start haul serve"
        serve.start(deadline)
        step = "launch chromium"
        browser = Chromium(args.chromium, deadline)
        browser.start()
        browser.wait_port()
        cdp = CountingCDP(browser.page_ws_url())
        for m in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
            cdp.send(m)
        cdp.send("Page.addScriptToEvaluateOnNewDocument", {"source": TRACK})
        step = "open page"
        cdp.send("Page.navigate", {"url": serve.base() + "/"})
        wait_for("open page", lambda: cdp.eval("document.readyState === 'complete' && !!document.querySelector('#downloads')"), bool)
        cdp.eval(HELPERS)
        cdp.eval("__chk.set('#secret', %s) && __chk.click('#connect')" % json.dumps(secret))
        wait_for("connect with the secret: connected, stream open", page_state,
                 lambda s: (s["status"] or "").startswith("connected") and s["stream"] == "open", within=20)

        if "restart" in steps:
            step = "restart"
            gid = serve.call("aria2.addUri", [[args.slow_url], {"out": "slow.bin"}])
            wait_for("restart: the slow download is active", lambda: cdp.eval("__chk.row(%s)" % json.dumps(gid)),
                     lambda r: r is not None and r["state"] == "active" and (r["percent"] or 0) > 0, within=30)
            figures_move_by_stream(gid, "restart: figures from the stream before the kill")
            events_before, sockets_before = cdp.events_requests, cdp.websockets
            serve.kill9()
            cdp.pump(8)
            down = {"events": cdp.events_requests - events_before, "websockets": cdp.websockets - sockets_before}
            summary["while_down_8s"] = down
            log("restart: while down for 8 s: %s" % down)
            # A reconnect every 3 s is 3 or 4 handshakes in 8 s; the stream is closed with the socket
            # (the EventSource may try once before the socket notices).
            if down["websockets"] > 4 or down["events"] > 2:
                raise StepFailed("restart: reconnect storm while the server was down: %s in 8 s" % down)
            serve.start(deadline)
            events_at_restart, sockets_at_restart = cdp.events_requests, cdp.websockets
            wait_for("restart: connected again, stream open, by itself", page_state,
                     lambda s: (s["status"] or "").startswith("connected") and s["stream"] == "open", within=20)
            wait_for("restart: the download active again", lambda: cdp.eval("__chk.row(%s)" % json.dumps(gid)),
                     lambda r: r is not None and r["state"] == "active", within=30)
            figures_move_by_stream(gid, "restart: figures from the stream after the restart")
            cdp.pump(6)
            s = page_state()
            after = {"events": cdp.events_requests - events_at_restart, "websockets": cdp.websockets - sockets_at_restart,
                     "rows": len(s["gids"]), "distinct": len(set(s["gids"])), "live_event_sources": s["live"]}
            summary["after_restart"] = after
            log("restart: after: %s" % after)
            if after["rows"] != after["distinct"] or s["gids"].count(gid) != 1:
                raise StepFailed("restart: duplicate rows: %s" % s["gids"])
            if after["live_event_sources"] != 1:
                raise StepFailed("restart: %d EventSources open (want 1)" % after["live_event_sources"])
            if after["events"] > 2 or after["websockets"] > 2:
                raise StepFailed("restart: reconnect storm after the restart: %s" % after)
            serve.call("aria2.remove", [gid])
            summary["passed"].append("restart")

        small = None
        if "secret" in steps or "gone" in steps or "hostile" in steps or "swap" in steps:
            step = "complete download"
            small = serve.call("aria2.addUri", [[args.small_url], {"out": "small.bin"}])
            wait_for("the small download complete", lambda: cdp.eval("__chk.row(%s)" % json.dumps(small)),
                     lambda r: r is not None and r["state"] == "complete", within=30)

        if "secret" in steps:
            step = "secret"
            downloads = os.path.join(browser.tmp, "downloads")
            os.makedirs(downloads, exist_ok=True)
            cdp.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
            cdp.eval("__chk.click(%s)" % json.dumps(row_sel(small) + " .file"))
            wait_for("secret: the browser saved small.bin", lambda: os.path.exists(os.path.join(downloads, "small.bin")), bool, within=20)
            cdp.pump(1)
            history = cdp.send("Page.getNavigationHistory")
            urls = [e.get("url", "") for e in history.get("entries", [])]
            if any(secret in u or "token=" in u for u in urls):
                raise StepFailed("secret: a history entry carries the secret: %s" % urls)
            if secret in serve.stderr_text():
                raise StepFailed("secret: haul serve printed the secret")
            if not cdp.file_requests:
                raise StepFailed("secret: no request to the file link was seen")
            referers = [h for r in cdp.file_requests for k, h in r.get("headers", {}).items() if k.lower() == "referer" and h]
            if referers:
                raise StepFailed("secret: the file link's request carried a Referer: %s" % referers)
            summary["passed"].append("secret")

        if "gone" in steps:
            step = "gone"
            path = os.path.join(directory, "small.bin")
            os.remove(path)
            cdp.eval("__chk.click(%s)" % json.dumps(row_sel(small) + " .file"))
            time.sleep(3)
            try:
                s = page_state()
            except StepFailed as e:
                raise StepFailed("gone: the page is no longer the dashboard after Download (%s)" % e)
            if s["path"] != "/" or not s["gids"]:
                raise StepFailed("gone: Download left the dashboard for %s" % s["path"])
            wait_for("gone: #message says why the file cannot be downloaded", page_state,
                     lambda s: "no longer" in (s["message"] or ""), within=10)
            summary["passed"].append("gone")

        if "hostile" in steps:
            step = "hostile"
            marker = "document.body.setAttribute('data-pwned','1')"
            payloads = [
                '<img src=x onerror="%s">' % marker,
                "\"'><script>%s</script>" % marker,
                "line one\nline two \u202egnp.exe",
                "x" * 10240,
            ]
            row = row_sel(small)
            for payload in payloads:
                cdp.eval("__chk.click(%s)" % json.dumps(row + " .move"))
                cdp.eval("__chk.set('#move-dir', %s) && __chk.set('#move-out', %s) && __chk.click('#move-submit')"
                         % (json.dumps("../" + payload), json.dumps(payload)))
                shown = wait_for("hostile: the move's error shown", page_state, lambda s: "haul.move failed" in (s["message"] or ""),
                                 within=10)["message"]
                # A right-to-left override is written out, never applied (it would reorder what is read).
                if "\u202e" in payload and ("\u202e" in shown or "\u27e8U+202E\u27e9" not in shown):
                    raise StepFailed("hostile: a right-to-left override in an error is shown applied, not written out: %r" % shown[:300])
                cdp.eval("document.querySelector('#move-cancel').click(); __chk.set('#add-url', %s) && __chk.click('#add-button')"
                         % json.dumps("ftp://" + payload))
                wait_for("hostile: the add's error shown", page_state, lambda s: "add failed" in (s["message"] or ""), within=10)
            # A name that survives the server's sanitizer with quotes and an attribute in it.
            odd = "a' onmouseover='%s' b.bin" % marker.replace("'", "")
            odd_gid = serve.call("aria2.addUri", [[args.small_url], {"out": odd}])
            wait_for("hostile: the oddly named download complete", lambda: cdp.eval("__chk.row(%s)" % json.dumps(odd_gid)),
                     lambda r: r is not None and r["state"] == "complete", within=30)
            cdp.eval("__chk.click(%s)" % json.dumps(row_sel(odd_gid) + " .delete-files"))
            listed = wait_for("hostile: the confirmation lists the odd name as text",
                              lambda: cdp.eval("(() => { const p = document.querySelector('#confirm-delete'); return p && !p.hidden ? "
                                               "{text: p.textContent, elements: p.querySelectorAll('#confirm-delete-files *').length, "
                                               "items: p.querySelectorAll('#confirm-delete-files li').length} : null; })()"),
                              lambda v: v is not None and odd in v["text"], within=10)
            if listed["elements"] != listed["items"]:
                raise StepFailed("hostile: the confirmation list has elements other than its items: %s" % listed)
            frames_before = len(cdp.frames_sent)
            cdp.eval("const y = document.querySelector('#confirm-delete-yes'); y.click(); y.click(); true")
            wait_for("hostile: the result lists the file deleted", lambda: cdp.eval("__chk.text('#delete-result-deleted')"),
                     lambda t: bool(t) and odd in t, within=10)
            cdp.pump(1)
            removals = [f for f in cdp.frames_sent[frames_before:] if "haul.removeWithFiles" in f]
            if len(removals) != 1:
                raise StepFailed("hostile: a double click on the confirmation sent %d removals" % len(removals))
            pwned = cdp.eval("document.body.getAttribute('data-pwned') || document.querySelectorAll('main img, main script').length")
            if pwned:
                raise StepFailed("hostile: the page ran or inserted server text: %r" % pwned)
            # The server's directory (-d) has a right-to-left override: the row's tooltip (the whole
            # path) shows it written out, never applied.
            title = cdp.eval("document.querySelector(%s).title" % json.dumps(row_sel(small) + " .name-text"))
            if "\u202e" in title or "\u27e8U+202E\u27e9" not in title:
                raise StepFailed("hostile: a right-to-left override in a row's path is not shown written out in its tooltip: %s" % ascii(title[:300]))
            if cdp.exceptions:
                raise StepFailed("hostile: page exceptions: %s" % cdp.exceptions)
            summary["passed"].append("hostile")

        if "swap" in steps:
            step = "swap"
            # The confirmation listed the file as this download's; before Yes, another file takes
            # its name (a hostile local process, or the user saving over it).
            swap_gid = serve.call("aria2.addUri", [[args.small_url], {"out": "swap.bin"}])
            wait_for("swap: the download complete", lambda: cdp.eval("__chk.row(%s)" % json.dumps(swap_gid)),
                     lambda r: r is not None and r["state"] == "complete", within=30)
            path = os.path.join(directory, "swap.bin")
            cdp.eval("__chk.click(%s)" % json.dumps(row_sel(swap_gid) + " .delete-files"))
            wait_for("swap: the confirmation lists the file to delete",
                     lambda: cdp.eval("(() => { const p = document.querySelector('#confirm-delete'); "
                                      "return p && !p.hidden ? p.querySelector('#confirm-delete-files').textContent : null; })()"),
                     lambda v: bool(v) and path in v, within=10)
            os.rename(path, path + ".orig")
            with open(path, "wb") as f:
                f.write(b"not haul's file\n")
            cdp.eval("__chk.click('#confirm-delete-yes')")
            shown = wait_for("swap: the result is shown",
                             lambda: cdp.eval("(() => { const p = document.querySelector('#delete-result'); return p && !p.hidden ? "
                                              "{deleted: p.querySelector('#delete-result-deleted').textContent, "
                                              "kept: p.querySelector('#delete-result-kept').textContent} : null; })()"),
                             lambda v: v is not None, within=10)
            if path in shown["deleted"] or path not in shown["kept"]:
                raise StepFailed("swap: the result does not say the swapped-in file was kept: %s" % shown)
            with open(path, "rb") as f:
                if f.read() != b"not haul's file\n":
                    raise StepFailed("swap: the swapped-in file was changed or deleted")
            summary["swap_result"] = shown
            summary["passed"].append("swap")

        if "foreign" in steps:
            step = "foreign"
            # A crafted link: this server's page, its RPC pointed (?rpc=) at another local process
            # (here another haul serve, with a secret of its own, that takes this page's origin as a
            # hostile process would) that asks for a secret.
            other = Serve(args.haul, secret + "-other", os.path.join(args.work, "state-other"), directory, args.work,
                          extra=["--allow-origin", serve.base()])
            other.runs = 100
            try:
                other.start(deadline)
                cdp.send("Page.navigate", {"url": serve.base() + "/?rpc=ws://127.0.0.1:%d/jsonrpc" % other.port})
                wait_for("foreign: page open", lambda: cdp.eval("document.readyState === 'complete' && !!document.querySelector('#downloads')"), bool)
                cdp.eval(HELPERS)
                status = wait_for("foreign: the page asks for a secret", page_state,
                                  lambda s: (s["status"] or "").startswith("error"), within=15)["status"]
                summary["foreign_status"] = status
                if "not the server this page came from" not in status:
                    raise StepFailed("foreign: the page asks another process's endpoint for a secret without saying it is "
                                     "not the server the page came from: %r" % status)
                summary["passed"].append("foreign")
            finally:
                other.stop()

        if "refused" in steps:
            step = "refused"
            cdp.send("Fetch.enable", {"patterns": [{"urlPattern": "*/haul/events*"}]})
            cdp.refuse_events = True
            # Connect again: the page drops its stream and asks for a new one, which is refused.
            cdp.eval("__chk.click('#connect')")
            wait_for("refused: the page sees the stream refused", lambda: (cdp.pump(0.2), page_state())[1],
                     lambda s: s["stream"] == "off" and cdp.refused >= 1, within=15)
            polls_before = page_state()["refreshes"]
            cdp.pump(7)
            refused = cdp.refused
            s = page_state()
            summary["refused_while_refusing"] = {"refused": refused, "polls": s["refreshes"] - polls_before}
            # Tried again by itself (2 s, then 4 s), not in a storm, and polling meanwhile.
            if refused < 2:
                raise StepFailed("refused: the page never tried the stream again after a 503 (%d tries in 7 s)" % refused)
            if refused > 4:
                raise StepFailed("refused: %d tries of the stream in 7 s (a storm)" % refused)
            if s["refreshes"] - polls_before < 3:
                raise StepFailed("refused: the page did not poll while the stream was refused: %s" % s)
            cdp.refuse_events = False
            wait_for("refused: the stream opens by itself once the server takes it", lambda: (cdp.pump(0.2), page_state())[1],
                     lambda s: s["stream"] == "open" and s["live"] == 1, within=20)
            cdp.send("Fetch.disable")
            summary["passed"].append("refused")

        step = "done"
        summary["ok"] = True
        exit_code = 0
    except StepFailed as e:
        log("FAILED at step '%s': %s" % (step, e))
        if cdp is not None:
            try:
                log("  page: %s" % json.dumps(page_state())[:1500])
            except Exception:
                pass
    except Exception as e:
        log("FAILED at step '%s': unexpected %s: %s" % (step, type(e).__name__, e))
    finally:
        summary["step"] = step
        if cdp is not None:
            summary["page_exceptions"] = cdp.exceptions
            cdp.close()
        if browser is not None:
            browser.close()
        serve.stop()
        print(json.dumps(summary, separators=(",", ":")))
        sys.stdout.flush()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
