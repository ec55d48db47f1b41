// Haul dashboard: talks aria2-compatible JSON-RPC over a WebSocket.
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
    if (f && f.path) return baseName(f.path);
    if (f && f.uris && f.uris[0] && f.uris[0].uri) return f.uris[0].uri;
    return d.gid;
  }

  // ---- status line --------------------------------------------------------------------------
  function setStatus(text, kind) {
    var el = $("status");
    el.textContent = text;
    el.className = "status " + (kind || "");
  }

  function showMessage(text, kind) {
    var el = $("message");
    el.textContent = text || "";
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
    if (ws) { var old = ws; ws = null; old.close(); }
    rejectAll("reconnecting");
    authed = false;
    secret = $("secret").value;
    var url = rpcUrl();
    $("endpoint").textContent = url;
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
        timer = setInterval(refresh, 1000);
      }, function (err) {
        if (ws !== sock) return;
        keepAlive = false;
        ws = null; sock.close();
        if (/unauthorized/i.test(err.message)) {
          // The server wants a secret (aria2's "Unauthorized"): only now is one asked for.
          try { sessionStorage.removeItem(secretKey(url)); } catch (e) { /* storage disabled */ }
          setStatus(secret ? "error: wrong secret; enter the server's --secret and Connect" :
            "error: this server needs its secret; enter it and Connect", "bad");
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
      rejectAll("connection closed");
      setStatus("error: connection closed" + (ev.code ? " (" + ev.code + ")" : "") +
        (keepAlive ? ", reconnecting…" : ""), "bad");
      if (keepAlive) reconnectTimer = setTimeout(connect, 3000);
    };
  }

  function stopPolling() { clearInterval(timer); timer = null; }

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

  function renderGlobal(g) {
    if (!g) return;
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
      etaCell = el("td", "eta"), actions = el("td", "actions");
    name.appendChild(el("div", "name-text"));
    name.appendChild(el("div", "detail"));
    state.appendChild(el("span", "state"));
    var bar = el("div", "progress");
    bar.appendChild(el("div", "fill"));
    prog.appendChild(bar);
    prog.appendChild(el("div", "progress-text"));
    [["pause", "Pause"], ["resume", "Resume"], ["remove", "Remove"]].forEach(function (b) {
      var btn = el("button", b[0], b[1]);
      btn.type = "button";
      actions.appendChild(btn);
    });
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
    name.title = f && f.path ? String(f.path) : (d.dir ? String(d.dir) : "");
    tr.querySelector(".detail").textContent = d.errorMessage ? String(d.errorMessage) : "";
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
  }

  function render(list) {
    var tbody = $("downloads").tBodies[0], seen = {};
    list.forEach(function (d) {
      if (!d || !d.gid) return;
      var gid = String(d.gid);
      if (seen[gid]) return;
      seen[gid] = true;
      var tr = tbody.querySelector('tr[data-gid="' + CSS.escape(gid) + '"]') || makeRow(gid);
      updateRow(tr, d);
      tbody.appendChild(tr);             // keeps rows in server order (active, waiting, stopped)
    });
    Array.prototype.slice.call(tbody.rows).forEach(function (tr) {
      if (!seen[tr.getAttribute("data-gid")]) tbody.removeChild(tr);
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
    if (btn.classList.contains("pause")) method = "aria2.pause";
    else if (btn.classList.contains("resume")) method = "aria2.unpause";
    else if (btn.classList.contains("remove")) method = btn.getAttribute("data-method") || "aria2.remove";
    if (!method) return;
    btn.disabled = true;
    rpc(method, [gid]).then(function () { showMessage(""); }, function (err) {
      showMessage(method + " failed: " + err.message, "bad");
    }).then(function () { btn.disabled = false; refresh(); });
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
    $("endpoint").textContent = rpcUrl();
    var saved = null;
    try { saved = sessionStorage.getItem(secretKey(rpcUrl())); } catch (e) { /* storage disabled */ }
    if (saved !== null) $("secret").value = saved;
    // Connect at once, with the secret this tab used before or none: a server started without
    // --secret lists its downloads on the first visit; one that refuses asks for its secret.
    connect();
  });
})();
