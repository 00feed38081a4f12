// ratchet ui: follow a live run. The page names its stream in
// data-live; each "step" event carries a step's HTML (rendered and escaped
// by the server), which replaces the step of the same id or is appended;
// a "status" event means the run moved on, and the page reloads to show
// it. After new steps, the page's header, budget gauges, timeline and step
// count are fetched again (at most once a second) and swapped in, so that
// they move with the transcript. EventSource reconnects by itself, sending
// Last-Event-ID.
(function () {
  "use strict";
  function follow() {
    var run = document.getElementById("run");
    if (!run || !run.dataset.live || !window.EventSource) return;
    var es = new EventSource(run.dataset.live);
    var transcript = document.getElementById("transcript");
    // The parts that summarise the run, rendered (and escaped) by the
    // server like the rest of the page.
    var parts = ["p.meta", "section.budget", "section.timeline", ".transcript-wrap > h2"];
    var pending = false;
    function refresh() {
      if (pending) return;
      pending = true;
      setTimeout(function () {
        fetch(window.location.href, { credentials: "same-origin" })
          .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
          .then(function (html) {
            var doc = new DOMParser().parseFromString(html, "text/html");
            parts.forEach(function (sel) {
              var now = document.querySelector(sel), next = doc.querySelector(sel);
              if (now && next) now.replaceWith(document.importNode(next, true));
            });
          })
          .catch(function () {})
          .finally(function () { pending = false; });
      }, 1000);
    }
    es.addEventListener("step", function (ev) {
      var tpl = document.createElement("template");
      tpl.innerHTML = ev.data;
      var el = tpl.content.firstElementChild;
      if (!el || !transcript) return;
      var old = document.getElementById(el.id);
      if (old) old.replaceWith(el); else transcript.appendChild(el);
      run.dataset.lastEvent = ev.lastEventId;
      refresh();
    });
    es.addEventListener("status", function (ev) {
      if (ev.data !== run.dataset.status) {
        es.close();
        window.location.reload();
      }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", follow);
  else follow();
})();
