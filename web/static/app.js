// tenax's live view: every element marked data-fragment is replaced by the
// server-rendered fragment of the same id, pushed as a Server-Sent Event.
// Without JavaScript the page still works; it just does not update.
(function () {
  "use strict";
  var source = document.querySelector("[data-events]");
  var conn = document.getElementById("conn");
  function state(s, text) {
    if (!conn) return;
    conn.dataset.state = s;
    conn.textContent = text;
  }
  if (!source || !window.EventSource) {
    state("static", "static page");
    return;
  }
  var es = new EventSource(source.dataset.events);
  var last = {};
  var frags = document.querySelectorAll("[data-fragment]");
  frags.forEach(function (el) {
    es.addEventListener(el.id, function (e) {
      if (last[el.id] === e.data) return;
      last[el.id] = e.data;
      el.innerHTML = e.data;
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    });
  });
  es.addEventListener("error", function (e) {
    if (e.data) {
      state("error", e.data);
    }
  });
  es.addEventListener("end", function () {
    es.close();
    state("ended", "run ended");
  });
  es.onopen = function () { state("live", "live"); };
  es.onerror = function () {
    // The run ended (its process exits) or the server is gone: the page
    // keeps the last state it was sent; EventSource retries by itself.
    state("lost", "disconnected — showing the last state");
  };
})();
