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
  // Zoom: a drag across a chart opens the page zoomed into the time range
  // dragged over (?from=&to=, Unix seconds), which every chart and CSV
  // link then shows. The charts are replaced as the stream updates them,
  // so the drag keeps the chart's id and reads the chart again at its end.
  var drag = null;
  var band = document.createElement("div");
  band.className = "zoom-band";
  band.hidden = true;
  document.body.appendChild(band);
  function chartTime(svg, clientX) {
    var r = svg.getBoundingClientRect();
    var vb = svg.viewBox.baseVal;
    var x = (clientX - r.left) * vb.width / r.width;
    var x0 = Number(svg.dataset.x0), x1 = Number(svg.dataset.x1);
    var t0 = Number(svg.dataset.t0), t1 = Number(svg.dataset.t1);
    x = Math.min(Math.max(x, x0), x1);
    return t0 + (x - x0) / (x1 - x0) * (t1 - t0);
  }
  document.addEventListener("pointerdown", function (e) {
    var svg = e.target.closest && e.target.closest("svg.chart[data-t0]");
    if (!svg || e.button !== 0) return;
    e.preventDefault();
    drag = { id: svg.id, x: e.clientX, y: svg.getBoundingClientRect().top + window.scrollY, h: svg.getBoundingClientRect().height };
    band.hidden = false;
    band.style.left = e.pageX + "px";
    band.style.top = drag.y + "px";
    band.style.height = drag.h + "px";
    band.style.width = "0px";
  });
  document.addEventListener("pointermove", function (e) {
    if (!drag) return;
    band.style.left = (Math.min(drag.x, e.clientX) + window.scrollX) + "px";
    band.style.width = Math.abs(e.clientX - drag.x) + "px";
  });
  document.addEventListener("pointerup", function (e) {
    if (!drag) return;
    var d = drag;
    drag = null;
    band.hidden = true;
    var svg = document.getElementById(d.id);
    if (!svg || Math.abs(e.clientX - d.x) < 5) return;
    var a = chartTime(svg, d.x), b = chartTime(svg, e.clientX);
    var from = Math.min(a, b) / 1000, to = Math.max(a, b) / 1000;
    if (to - from < 1) to = from + 1;
    location.assign(location.pathname + "?from=" + from.toFixed(3) + "&to=" + to.toFixed(3));
  });

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
