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
  // Answer without leaving the page, so that its event stream goes on (a
  // form post reloads the page, which works too, without JavaScript).
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.matches("form.buttons")) return;
    e.preventDefault();
    var data = new FormData(form, e.submitter);
    data.set("via", "fetch");
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    fetch(form.action, { method: "POST", body: new URLSearchParams(data), credentials: "same-origin" })
      .then(function (r) {
        if (r.ok) {
          form.insertAdjacentHTML("afterend", "<p class=\"sent\">Answer sent.</p>");
          return;
        }
        return r.text().then(function (t) {
          form.insertAdjacentHTML("afterend", "<p class=\"error\"></p>");
          form.nextElementSibling.textContent = t;
          form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
        });
      });
  });
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
  es.addEventListener("end", function (e) {
    es.close();
    state("ended", e.data || "run ended");
  });
  es.onopen = function () { state("live", "live"); };
  es.onerror = function () {
    // The run ended (its process exits) or the server is gone: the page
    // keeps the last state it was sent; EventSource retries by itself.
    state("lost", "disconnected — showing the last state");
  };
})();
