// ratchet ui: follow a live run. The page names its stream in
// data-live; each "step" event carries a step's HTML (rendered and escaped
// by the server), which replaces the step of the same id or is appended;
// a "status" event means the run moved on, and the page reloads to show
// it. EventSource reconnects by itself, sending Last-Event-ID.
(function () {
  "use strict";
  function follow() {
    var run = document.getElementById("run");
    if (!run || !run.dataset.live || !window.EventSource) return;
    var es = new EventSource(run.dataset.live);
    var transcript = document.getElementById("transcript");
    es.addEventListener("step", function (ev) {
      var tpl = document.createElement("template");
      tpl.innerHTML = ev.data;
      var el = tpl.content.firstElementChild;
      if (!el || !transcript) return;
      var old = document.getElementById(el.id);
      if (old) old.replaceWith(el); else transcript.appendChild(el);
      run.dataset.lastEvent = ev.lastEventId;
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
