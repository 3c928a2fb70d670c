// The page's only script: live updates (server-sent events from /events),
// live search, and copy buttons. Every page works without it.
"use strict";
(function () {
  var body = document.body;
  var status = document.getElementById("live-status");
  var pending = null;
  var inflight = false;
  var again = false;

  function announce(text) {
    if (status) status.textContent = text;
  }

  // swap replaces #live with the same region of a freshly rendered page.
  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("live");
    var old = document.getElementById("live");
    if (!fresh || !old) return;
    var focused = document.activeElement && old.contains(document.activeElement) ? document.activeElement.id : "";
    // What the user typed or picked in a form survives the swap.
    var typed = {};
    var fields = old.querySelectorAll("input[id][data-edited], select[id][data-edited], textarea[id][data-edited]");
    for (var i = 0; i < fields.length; i++) typed[fields[i].id] = fields[i].value;
    old.replaceWith(document.importNode(fresh, true));
    for (var id in typed) {
      var f = document.getElementById(id);
      if (f) { f.value = typed[id]; f.dataset.edited = "1"; }
    }
    if (doc.body && doc.body.dataset.generation) body.dataset.generation = doc.body.dataset.generation;
    if (doc.title) document.title = doc.title;
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    wireCopy();
  }

  function load(url, note) {
    if (inflight) { again = true; return; }
    inflight = true;
    fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) { swap(html); if (note) announce(note); })
      .catch(function () {})
      .then(function () {
        inflight = false;
        if (again) { again = false; load(location.href, note); }
      });
  }

  // refresh re-reads the current page's region soon (changes come in bursts).
  function refresh(note) {
    if (pending) clearTimeout(pending);
    pending = setTimeout(function () { pending = null; load(location.href, note); }, 50);
  }

  function affects(ev) {
    var live = body.dataset.live || "";
    if (live === "catalog") return true;
    if (live.indexOf("skill:") === 0) return ev.id === live.slice(6);
    return false;
  }

  function edited(e) {
    if (e.target && e.target.id && e.target.dataset) e.target.dataset.edited = "1";
  }
  document.addEventListener("input", edited);
  document.addEventListener("change", edited);

  // affectsVersions: a "versions" event (a new version or a label move)
  // concerns a skill page or a prompt page of that id.
  function affectsVersions(ev) {
    var live = body.dataset.live || "";
    return live === ev.kind + ":" + ev.id;
  }

  if (window.EventSource && body.dataset.live) {
    var es = new EventSource("/events");
    es.addEventListener("hello", function (e) {
      var d = JSON.parse(e.data);
      if (d.generation > Number(body.dataset.generation || 0)) refresh("The catalog changed.");
    });
    es.addEventListener("change", function (e) {
      var d = JSON.parse(e.data);
      if (affects(d)) refresh((d.op === "remove" ? "Removed " : "Updated ") + d.id + ".");
    });
    es.addEventListener("versions", function (e) {
      var d = JSON.parse(e.data);
      if (affectsVersions(d)) refresh("The versions of " + d.id + " changed.");
    });
    es.addEventListener("resync", function () { refresh("The catalog changed."); });
  }

  // Live search on the catalog page: results follow the typing.
  var q = document.getElementById("q");
  if (q && location.pathname === "/") {
    var timer = null;
    q.addEventListener("input", function () {
      if (timer) clearTimeout(timer);
      timer = setTimeout(function () {
        var url = q.value.trim() ? "/?q=" + encodeURIComponent(q.value.trim()) : "/";
        history.replaceState(null, "", url);
        load(url, "Search results updated.");
      }, 150);
    });
  }

  function wireCopy() {
    var buttons = document.querySelectorAll("button.copy[data-copy]");
    for (var i = 0; i < buttons.length; i++) {
      var b = buttons[i];
      if (b.dataset.wired || !navigator.clipboard) continue;
      b.dataset.wired = "1";
      b.hidden = false;
      b.addEventListener("click", function (e) {
        var text = e.currentTarget.dataset.copy;
        navigator.clipboard.writeText(text).then(function () { announce("Copied " + text); });
      });
    }
  }
  wireCopy();
})();
