// Haul dashboard: talks aria2-compatible JSON-RPC over a WebSocket, and follows haul serve's
// event stream (/haul/events) for live figures when the server has one.
// All server-provided text is inserted with textContent or attributes, never as HTML.
(function () {
  "use strict";

  var KEYS = ["gid", "status", "totalLength", "completedLength", "downloadSpeed", "files", "errorMessage", "dir"];
  var NOTIFICATIONS = ["aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop",
    "aria2.onDownloadComplete", "aria2.onDownloadError"];
  var STORAGE_KEY = "haul.secret";

  var $ = function (id) { return document.getElementById(id); };
  var ws = null, secret = "", nextId = 1, pending = {}, timer = null, reconnectTimer = null;
  var refreshing = false, refreshAgain = false, useMulticall = true, authed = false;
  var keepAlive = false;  // reconnect after a drop once a connection was authorized
  // haul serve's own methods (haul.*), from system.listMethods: an aria2 server has none, and
  // the row actions that need them are not offered there.
  var haulMethods = {};
  var rows = {};          // gid -> the last figures shown in its row (a status, merged with progress)
  // Polling stays the fallback: every second without the stream, every 10 s while it is open
  // (a safety net; the stream's notifications ask for a refresh as they come).
  var POLL_MS = 1000, POLL_WITH_STREAM_MS = 10000;
  var events = null, streamOpen = false, streamEvents = 0, refreshes = 0;
  // A refused stream (the server at its bound of streams answers 503; an EventSource then gives
  // up for good) is tried again after STREAM_RETRY_MS, doubled after each refusal up to
  // STREAM_RETRY_MAX_MS, and reset once a stream opens. Polling covers the wait.
  var STREAM_RETRY_MS = 2000, STREAM_RETRY_MAX_MS = 60000;
  var streamRetryTimer = null, streamRetryMs = STREAM_RETRY_MS, streamRefusals = 0;

  // ---- endpoint -----------------------------------------------------------------------------
  function isLoopback(host) {
    return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
  }

  // The default is this page's own host. `?rpc=ws://host:port/jsonrpc` overrides it, but only
  // for the page's own host name or a loopback address, so a crafted link cannot send the
  // secret somewhere else.
  function rpcUrl() {
    var fallback = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/jsonrpc";
    var param = new URLSearchParams(location.search).get("rpc");
    if (!param) return fallback;
    try {
      var u = new URL(param);
      if ((u.protocol === "ws:" || u.protocol === "wss:") &&
          (u.hostname === location.hostname || isLoopback(u.hostname))) return u.href;
    } catch (e) { /* fall through */ }
    showMessage("ignored ?rpc=" + param + " (only ws:// or wss:// on this host or loopback)");
    return fallback;
  }

  // A secret is kept for the endpoint it was given to, and only ever sent back there: a crafted
  // `?rpc=` to another loopback port (another local process) gets none on load.
  function secretKey(url) { return STORAGE_KEY + " " + url; }

  // A warning when `url` (from `?rpc=`) is not the server this page came from: a crafted link can
  // point the page at another local process, which then asks for a secret; the user must know
  // whose it is before typing this server's.
  function foreignNote(url) {
    var u = new URL(url);
    if (u.host === location.host) return "";
    return " (careful: " + u.host + " is not the server this page came from, " + location.host +
      "; give it a secret only if you started it)";
  }

  // The HTTP origin of the RPC endpoint (its file and event routes live there).
  function httpOrigin() {
    var u = new URL(rpcUrl());
    return (u.protocol === "wss:" ? "https://" : "http://") + u.host;
  }

  // ---- formatting ---------------------------------------------------------------------------
  function num(s) { var n = Number(s); return isFinite(n) ? n : 0; }

  function bytes(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
  }

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  function eta(seconds) {
    if (!isFinite(seconds) || seconds < 0) return "—";
    seconds = Math.ceil(seconds);
    var h = Math.floor(seconds / 3600), m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
    if (h > 0) return h + "h " + pad2(m) + "m";
    if (m > 0) return m + "m " + pad2(s) + "s";
    return s + "s";
  }

  function baseName(path) {
    var parts = String(path).split(/[\\/]/);
    return parts[parts.length - 1] || String(path);
  }

  function displayName(d) {
    var f = d.files && d.files[0];
    if (f && f.path) return shown(baseName(f.path));
    if (f && f.uris && f.uris[0] && f.uris[0].uri) return shown(f.uris[0].uri);
    return d.gid;
  }

  // Text from the server or a URL (names, paths, errors) as shown: each bidirectional control
  // (a right-to-left override makes "invoice\u202Egpj.exe" read as "invoiceexe.jpg") is written
  // out as ⟨U+202E⟩, so what is read is what is there.
  function shown(text) {
    return String(text).replace(/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g, function (c) {
      return "⟨U+" + ("000" + c.charCodeAt(0).toString(16).toUpperCase()).slice(-4) + "⟩";
    });
  }

  // ---- status line --------------------------------------------------------------------------
  function setStatus(text, kind) {
    var el = $("status");
    el.textContent = shown(text);
    el.className = "status " + (kind || "");
  }

  function showMessage(text, kind) {
    var el = $("message");
    el.textContent = shown(text || "");
    el.className = "message " + (kind || "");
  }

  // ---- JSON-RPC -----------------------------------------------------------------------------
  function rpc(method, params) {
    return new Promise(function (resolve, reject) {
      if (!ws || ws.readyState !== WebSocket.OPEN) { reject(new Error("not connected")); return; }
      var id = String(nextId++);
      pending[id] = { resolve: resolve, reject: reject };
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: id, method: method,
        params: ["token:" + secret].concat(params || []) }));
    });
  }

  function rejectAll(reason) {
    var old = pending; pending = {};
    Object.keys(old).forEach(function (id) { old[id].reject(new Error(reason)); });
  }

  function onSocketMessage(event) {
    var msg;
    try { msg = JSON.parse(event.data); } catch (e) { return; }
    if (msg && msg.id !== undefined && msg.id !== null && pending[msg.id]) {
      var p = pending[msg.id]; delete pending[msg.id];
      if (msg.error) p.reject(new Error(String(msg.error.message || "error " + msg.error.code)));
      else p.resolve(msg.result);
    } else if (msg && NOTIFICATIONS.indexOf(msg.method) >= 0) {
      refresh();
    }
  }

  function connect() {
    clearTimeout(reconnectTimer);
    stopPolling();
    closeStream();
    haulMethods = {};
    if (ws) { var old = ws; ws = null; old.close(); }
    rejectAll("reconnecting");
    authed = false;
    secret = $("secret").value;
    var url = rpcUrl();
    $("endpoint").textContent = shown(url);
    setStatus("connecting…", "busy");
    var sock;
    try { sock = new WebSocket(url); } catch (e) { setStatus("error: " + e.message, "bad"); return; }
    ws = sock;
    sock.onopen = function () {
      if (ws !== sock) return;
      rpc("aria2.getGlobalStat").then(function (stat) {
        if (ws !== sock) return;
        authed = true;
        keepAlive = true;
        $("connect-form").classList.remove("needs-secret");
        try { sessionStorage.setItem(secretKey(url), secret); } catch (e) { /* storage disabled */ }
        setStatus("connected", "good");
        renderGlobal(stat);
        rpc("aria2.getVersion").then(function (v) {
          if (ws === sock && v && v.version) setStatus("connected · version " + v.version, "good");
        }, function () {});
        refresh();
        setPolling(POLL_MS);
        rpc("system.listMethods").then(function (list) {
          if (ws !== sock || !Array.isArray(list)) return;
          haulMethods = {};
          list.forEach(function (m) { if (/^haul\./.test(m)) haulMethods[m] = true; });
          openStream();
          refresh();
        }, function () {});
      }, function (err) {
        if (ws !== sock) return;
        keepAlive = false;
        ws = null; sock.close();
        if (/unauthorized/i.test(err.message)) {
          // The server wants a secret (aria2's "Unauthorized"): only now is one asked for.
          try { sessionStorage.removeItem(secretKey(url)); } catch (e) { /* storage disabled */ }
          setStatus((secret ? "error: wrong secret; enter the server's --secret and Connect" :
            "error: this server needs its secret; enter it and Connect") + foreignNote(url), "bad");
          $("connect-form").classList.add("needs-secret");
          $("secret").focus();
          return;
        }
        setStatus("error: " + err.message, "bad");
      });
    };
    sock.onmessage = function (ev) { if (ws === sock) onSocketMessage(ev); };
    sock.onerror = function () { /* onclose follows */ };
    sock.onclose = function (ev) {
      if (ws !== sock) return;
      ws = null;
      stopPolling();
      closeStream();
      rejectAll("connection closed");
      setStatus("error: connection closed" + (ev.code ? " (" + ev.code + ")" : "") +
        (keepAlive ? ", reconnecting…" : ""), "bad");
      if (keepAlive) reconnectTimer = setTimeout(connect, 3000);
    };
  }

  function stopPolling() { clearInterval(timer); timer = null; }

  function setPolling(ms) {
    clearInterval(timer);
    timer = authed && ws ? setInterval(refresh, ms) : null;
  }

  // ---- event stream -------------------------------------------------------------------------
  function counters() {
    document.body.setAttribute("data-stream-events", String(streamEvents));
    document.body.setAttribute("data-refreshes", String(refreshes));
    document.body.setAttribute("data-stream", streamOpen ? "open" : (events ? "connecting" : "off"));
    document.body.setAttribute("data-stream-refusals", String(streamRefusals));
  }

  function showLive(text) { $("live").textContent = "live figures: " + text; counters(); }

  // The stream of this same origin only (the page's CSP allows no other), and only on a server
  // that has it (haul.* methods listed). Its token goes in the URL: an EventSource sends no header.
  function eventsUrl() {
    if (!haulMethods["haul.fileLink"]) return null;
    var origin = httpOrigin();
    if (origin !== location.origin) return null;
    return origin + "/haul/events" + (secret ? "?token=" + encodeURIComponent(secret) : "");
  }

  function closeStream() {
    clearTimeout(streamRetryTimer);
    streamRetryTimer = null;
    if (events) { var old = events; events = null; old.close(); }
    streamOpen = false;
    showLive("off (polling)");
  }

  function openStream() {
    closeStream();
    var url = eventsUrl();
    if (!url || typeof EventSource === "undefined") { showLive("off (polling; this server has no event stream here)"); return; }
    var es;
    try { es = new EventSource(url); } catch (e) { showLive("off (polling): " + e.message); return; }
    events = es;
    showLive("connecting…");
    es.onopen = function () {
      if (events !== es) return;
      streamOpen = true;
      streamRetryMs = STREAM_RETRY_MS;
      setPolling(POLL_WITH_STREAM_MS);
      showLive("on (event stream)");
    };
    es.onerror = function () {
      if (events !== es) return;
      // Polling takes over at once; an EventSource retries by itself unless the server refused it.
      streamOpen = false;
      setPolling(POLL_MS);
      if (es.readyState !== EventSource.CLOSED) { showLive("reconnecting… (polling meanwhile)"); return; }
      events = null;
      es.close();
      streamRefusals++;
      var wait = streamRetryMs;
      streamRetryMs = Math.min(streamRetryMs * 2, STREAM_RETRY_MAX_MS);
      showLive("off (polling): the stream was refused; trying again in " + Math.round(wait / 1000) + " s");
      streamRetryTimer = setTimeout(function () { streamRetryTimer = null; if (ws && authed) openStream(); }, wait);
    };
    es.addEventListener("haul.progress", function (ev) {
      if (events !== es) return;
      streamEvents++;
      var p;
      try { p = JSON.parse(ev.data); } catch (e) { return; }
      onProgress(p);
      counters();
    });
    NOTIFICATIONS.concat(["haul.resync"]).forEach(function (name) {
      es.addEventListener(name, function () {
        if (events !== es) return;
        streamEvents++;
        counters();
        refresh();
      });
    });
  }

  // One download's figures from the stream: its row is updated in place; a GID not shown yet is
  // listed by a refresh (never a row of its own, so no duplicates).
  function onProgress(p) {
    if (!p || !p.gid) return;
    var gid = String(p.gid), d = rows[gid];
    var tr = $("downloads").tBodies[0].querySelector('tr[data-gid="' + CSS.escape(gid) + '"]');
    if (!d || !tr) { refresh(); return; }
    ["completedLength", "totalLength", "downloadSpeed"].forEach(function (k) {
      if (p[k] !== undefined) d[k] = p[k];
    });
    updateRow(tr, d);
    // The total speed between polls: the sum of the rows' own, as the stream gives them.
    if (lastGlobal) {
      var total = 0;
      Object.keys(rows).forEach(function (g) { if (rows[g].status === "active") total += num(rows[g].downloadSpeed); });
      var g = {}; Object.keys(lastGlobal).forEach(function (k) { g[k] = lastGlobal[k]; });
      g.downloadSpeed = String(total);
      renderGlobal(g);
    }
  }

  // ---- refresh ------------------------------------------------------------------------------
  var CALLS = [
    ["aria2.tellActive", [KEYS]],
    ["aria2.tellWaiting", [0, 1000, KEYS]],
    ["aria2.tellStopped", [0, 1000, KEYS]],
    ["aria2.getGlobalStat", []]
  ];

  function fetchAll() {
    if (useMulticall) {
      var calls = CALLS.map(function (c) {
        return { methodName: c[0], params: ["token:" + secret].concat(c[1]) };
      });
      return rpc("system.multicall", [calls]).then(function (results) {
        return results.map(function (r) {
          if (Array.isArray(r)) return r[0];
          throw new Error(String((r && r.message) || "multicall failed"));
        });
      }, function (err) {
        if (!ws) throw err;
        useMulticall = false;            // server without system.multicall: plain calls
        return fetchAll();
      });
    }
    return Promise.all(CALLS.map(function (c) { return rpc(c[0], c[1]); }));
  }

  function refresh() {
    if (!authed || !ws) return;
    if (refreshing) { refreshAgain = true; return; }
    refreshing = true;
    refreshes++;
    counters();
    fetchAll().then(function (r) {
      render([].concat(r[0] || [], r[1] || [], r[2] || []));
      renderGlobal(r[3]);
    }, function (err) {
      if (ws) showMessage("refresh failed: " + err.message, "bad");
    }).then(function () {
      refreshing = false;
      if (refreshAgain) { refreshAgain = false; refresh(); }
    });
  }

  var lastGlobal = null;

  function renderGlobal(g) {
    if (!g) return;
    lastGlobal = g;
    $("global").textContent = "↓ " + bytes(num(g.downloadSpeed)) + "/s · " + num(g.numActive) +
      " active · " + num(g.numWaiting) + " waiting · " + num(g.numStopped) + " stopped";
  }

  // ---- table --------------------------------------------------------------------------------
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function makeRow(gid) {
    var tr = el("tr");
    tr.setAttribute("data-gid", gid);
    var name = el("td", "name"), state = el("td"), prog = el("td"), speed = el("td", "speed"),
      etaCell = el("td", "eta"), actions = el("td", "actions"), buttons = el("div", "buttons");
    name.appendChild(el("div", "name-text"));
    name.appendChild(el("div", "detail"));
    state.appendChild(el("span", "state"));
    var bar = el("div", "progress");
    bar.appendChild(el("div", "fill"));
    prog.appendChild(bar);
    prog.appendChild(el("div", "progress-text"));
    [["pause", "Pause"], ["resume", "Resume"], ["remove", "Remove"], ["file", "Download"], ["move", "Move"],
      ["delete-files", "Delete files"]].forEach(function (b) {
      var btn = el("button", b[0], b[1]);
      btn.type = "button";
      buttons.appendChild(btn);
    });
    actions.appendChild(buttons);
    [name, state, prog, speed, etaCell, actions].forEach(function (c) { tr.appendChild(c); });
    return tr;
  }

  function updateRow(tr, d) {
    var status = String(d.status || "");
    var total = num(d.totalLength), done = num(d.completedLength), speed = num(d.downloadSpeed);
    var percent = total > 0 ? Math.min(100, Math.floor(done * 100 / total)) : 0;
    var active = status === "active";
    tr.className = "st-" + status.replace(/[^a-z]/g, "");
    var name = tr.querySelector(".name-text");
    name.textContent = displayName(d);
    var f = d.files && d.files[0];
    name.title = f && f.path ? shown(f.path) : (d.dir ? shown(d.dir) : "");
    tr.querySelector(".detail").textContent = d.errorMessage ? shown(d.errorMessage) : "";
    tr.querySelector(".state").textContent = status;
    var bar = tr.querySelector(".progress");
    bar.setAttribute("data-percent", String(percent));
    bar.firstChild.style.width = percent + "%";
    tr.querySelector(".progress-text").textContent =
      bytes(done) + " / " + (total > 0 ? bytes(total) : "?") + " (" + percent + "%)";
    tr.querySelector(".speed").textContent = active ? bytes(speed) + "/s" : "—";
    tr.querySelector(".eta").textContent =
      active && speed > 0 && total > 0 ? eta((total - done) / speed) : "—";
    tr.querySelector(".pause").hidden = !(active || status === "waiting");
    tr.querySelector(".resume").hidden = status !== "paused";
    var stopped = status === "complete" || status === "error" || status === "removed";
    var remove = tr.querySelector(".remove");
    remove.textContent = stopped ? "Clear" : "Remove";
    remove.setAttribute("data-method", stopped ? "aria2.removeDownloadResult" : "aria2.remove");
    var file = tr.querySelector(".file");
    file.hidden = !(haulMethods["haul.fileLink"] && status === "complete");
    // haul serve hands out a file only when it has a --secret: without one, the button says why.
    file.classList.toggle("unavailable", !secret);
    file.title = secret ? "download the finished file from the server" :
      "this server runs without --secret; haul serve serves a download's file only with one";
    tr.querySelector(".move").hidden = !haulMethods["haul.move"] || status === "removed" || status === "error";
    tr.querySelector(".delete-files").hidden = !haulMethods["haul.removeWithFiles"];
  }

  function render(list) {
    var tbody = $("downloads").tBodies[0], seen = {};
    list.forEach(function (d) {
      if (!d || !d.gid) return;
      var gid = String(d.gid);
      if (seen[gid]) return;
      seen[gid] = true;
      var tr = tbody.querySelector('tr[data-gid="' + CSS.escape(gid) + '"]') || makeRow(gid);
      rows[gid] = d;
      updateRow(tr, d);
      tbody.appendChild(tr);             // keeps rows in server order (active, waiting, stopped)
    });
    Array.prototype.slice.call(tbody.rows).forEach(function (tr) {
      if (!seen[tr.getAttribute("data-gid")]) { delete rows[tr.getAttribute("data-gid")]; tbody.removeChild(tr); }
    });
    $("empty").hidden = tbody.rows.length > 0;
  }

  // ---- actions ------------------------------------------------------------------------------
  function onTableClick(ev) {
    var btn = ev.target.closest("button");
    if (!btn) return;
    var tr = btn.closest("tr[data-gid]");
    if (!tr) return;
    var gid = tr.getAttribute("data-gid"), method = null;
    if (btn.classList.contains("file")) { downloadFile(gid, btn); return; }
    if (btn.classList.contains("move")) { showMove(gid); return; }
    if (btn.classList.contains("delete-files")) { confirmDelete(gid, btn); return; }
    if (btn.classList.contains("pause")) method = "aria2.pause";
    else if (btn.classList.contains("resume")) method = "aria2.unpause";
    else if (btn.classList.contains("remove")) method = btn.getAttribute("data-method") || "aria2.remove";
    if (!method) return;
    btn.disabled = true;
    rpc(method, [gid]).then(function () { showMessage(""); }, function (err) {
      showMessage(method + " failed: " + err.message, "bad");
    }).then(function () { btn.disabled = false; refresh(); });
  }

  function nameOf(gid) { return rows[gid] ? displayName(rows[gid]) : gid; }

  function fileItems(list, entries, withReason) {
    list.textContent = "";
    (entries || []).forEach(function (f) {
      var li = el("li", null, shown(f.path) + " (" + shown(f.role) + ")");
      if (withReason && f.reason) li.appendChild(el("span", "reason", " — " + shown(f.reason)));
      list.appendChild(li);
    });
    if (!list.firstChild) list.appendChild(el("li", "none", "none"));
  }

  // Delete with files: a dry run lists what would go and what would stay; only a click on the
  // confirmation deletes, and the answer then says what was deleted and what was kept and why.
  var deleting = null;

  function confirmDelete(gid, btn) {
    btn.disabled = true;
    $("delete-result").hidden = true;
    rpc("haul.removeWithFiles", [gid, { dryRun: true }]).then(function (would) {
      deleting = gid;
      $("confirm-delete-title").textContent = "Delete " + nameOf(gid) + " (" + gid + ") with its files?";
      fileItems($("confirm-delete-files"), would.deleted, false);
      fileItems($("confirm-delete-kept"), would.kept, true);
      $("confirm-delete-kept-box").hidden = !(would.kept && would.kept.length);
      $("confirm-delete").setAttribute("data-gid", gid);
      $("confirm-delete").hidden = false;
      $("confirm-delete-no").focus();
    }, function (err) {
      showMessage("haul.removeWithFiles failed: " + err.message, "bad");
    }).then(function () { btn.disabled = false; });
  }

  function onConfirmDelete() {
    var gid = deleting;
    if (!gid) return;
    deleting = null;
    $("confirm-delete").hidden = true;
    var name = nameOf(gid);
    rpc("haul.removeWithFiles", [gid]).then(function (done) {
      $("delete-result-title").textContent = "Removed " + name + " (" + gid + ")";
      fileItems($("delete-result-deleted"), done.deleted, false);
      fileItems($("delete-result-kept"), done.kept, true);
      $("delete-result").setAttribute("data-gid", gid);
      $("delete-result").hidden = false;
      showMessage("");
    }, function (err) {
      showMessage("haul.removeWithFiles failed: " + err.message, "bad");
    }).then(refresh);
  }

  // The finished file: a short-lived signed link from haul.fileLink, followed at once (the server
  // answers it as an attachment) and kept on the page to follow again.
  function downloadFile(gid, btn) {
    if (!secret) {
      showMessage("Download is not offered: this server runs without --secret, and haul serve serves a " +
        "download's file only with one (start it with --secret, then Connect with it)", "bad");
      return;
    }
    btn.disabled = true;
    rpc("haul.fileLink", [gid]).then(function (link) {
      // Only a path of this server's file route: an answer such as "@elsewhere/..." would make
      // the link leave for another host.
      if (!/^\/haul\/file\/[0-9a-fA-F]+\?/.test(String(link.path))) throw new Error("unexpected link " + String(link.path));
      var href = httpOrigin() + String(link.path);
      return probeFile(href).then(function (refusal) {
        if (refusal) throw new Error(refusal);
        var a = $("file-link");
        a.href = href;
        // A download, never a navigation: a link followed later (expired, or its file gone since)
        // fails in the browser's downloads instead of replacing this page with the server's refusal.
        a.setAttribute("download", "");
        a.textContent = "download " + nameOf(gid);
        a.setAttribute("data-gid", gid);
        $("file-expires").textContent = link.expires ?
          "(link valid until " + new Date(num(link.expires) * 1000).toLocaleTimeString() + ")" : "";
        $("file-box").hidden = false;
        showMessage("");
        a.click();
      });
    }).then(null, function (err) {
      showMessage("Download failed: " + err.message, "bad");
    }).then(function () { btn.disabled = false; });
  }

  // Why the file at `href` cannot be downloaded now (the server's own words), or null when it can:
  // asked for its first byte only, before the link is followed, so a refusal (a file deleted or
  // replaced on disk: 410, 409) is said here rather than shown in place of the page. A probe that
  // cannot be made (another origin, which the page's CSP keeps it from fetching) lets the link go.
  function probeFile(href) {
    if (typeof fetch === "undefined" || new URL(href).origin !== location.origin) return Promise.resolve(null);
    return fetch(href, { headers: { Range: "bytes=0-0" }, cache: "no-store", credentials: "omit" }).then(function (r) {
      // 416: the file is there and empty.
      if (r.status === 200 || r.status === 206 || r.status === 416) { if (r.body) r.body.cancel(); return null; }
      return r.text().then(function (text) {
        return "the server refused the file (" + r.status + "): " + text.trim().slice(0, 500);
      });
    }, function () { return null; });
  }

  // Move: a small form (no prompt()), for a new directory, a new name, or both.
  var moving = null;

  function showMove(gid) {
    moving = gid;
    $("move-title").textContent = "Move " + nameOf(gid) + " (" + gid + ")";
    $("move-dir").value = "";
    $("move-out").value = "";
    $("move-out").placeholder = "file name (empty: " + nameOf(gid) + ")";
    $("move-form").setAttribute("data-gid", gid);
    $("move-form").hidden = false;
    $("move-dir").focus();
  }

  function onMove(ev) {
    ev.preventDefault();
    var gid = moving;
    if (!gid) return;
    var options = {}, dir = $("move-dir").value.trim(), out = $("move-out").value.trim();
    if (dir) options.dir = dir;
    if (out) options.out = out;
    if (!dir && !out) { showMessage("enter a directory, a file name or both to move to", "bad"); return; }
    $("move-submit").disabled = true;
    rpc("haul.move", [gid, options]).then(function (done) {
      moving = null;
      $("move-form").hidden = true;
      showMessage("moved " + gid + " to " + String(done.path), "good");
    }, function (err) {
      showMessage("haul.move failed: " + err.message, "bad");
    }).then(function () { $("move-submit").disabled = false; refresh(); });
  }

  function onAdd(ev) {
    ev.preventDefault();
    var url = $("add-url").value.trim(), out = $("add-out").value.trim();
    if (!url) { showMessage("enter a URL to download", "bad"); return; }
    var options = {};
    if (out) options.out = out;
    rpc("aria2.addUri", [[url], options]).then(function (gid) {
      showMessage("added " + gid, "good");
      $("add-url").value = "";
      $("add-out").value = "";
      refresh();
    }, function (err) {
      showMessage("add failed: " + err.message, "bad");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("connect-form").addEventListener("submit", function (ev) { ev.preventDefault(); connect(); });
    $("add-form").addEventListener("submit", onAdd);
    $("downloads").addEventListener("click", onTableClick);
    $("confirm-delete-yes").addEventListener("click", onConfirmDelete);
    $("confirm-delete-no").addEventListener("click", function () { deleting = null; $("confirm-delete").hidden = true; });
    $("delete-result-close").addEventListener("click", function () { $("delete-result").hidden = true; });
    $("move-form").addEventListener("submit", onMove);
    $("move-cancel").addEventListener("click", function () { moving = null; $("move-form").hidden = true; });
    counters();
    $("endpoint").textContent = shown(rpcUrl());
    var saved = null;
    try { saved = sessionStorage.getItem(secretKey(rpcUrl())); } catch (e) { /* storage disabled */ }
    if (saved !== null) $("secret").value = saved;
    // Connect at once, with the secret this tab used before or none: a server started without
    // --secret lists its downloads on the first visit; one that refuses asks for its secret.
    connect();
  });
})();
