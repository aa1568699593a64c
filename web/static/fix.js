// A fix run's page: the levers (skip, put first, add context) post without
// leaving the page, so its event stream goes on; the list of instructions
// shows them queued, then applied. Without JavaScript the forms post and
// come back to the page.
(function () {
  "use strict";
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.matches("form.lever")) return;
    e.preventDefault();
    var data = new FormData(form, e.submitter);
    data.set("via", "fetch");
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    var note = document.createElement("p");
    fetch(form.action, { method: "POST", body: new URLSearchParams(data), credentials: "same-origin" })
      .then(function (r) {
        if (r.ok) {
          note.className = "sent";
          note.textContent = "Sent: the run heeds it before its next attempt.";
          var text = form.querySelector("textarea");
          if (text) text.value = "";
          return;
        }
        return r.text().then(function (t) {
          note.className = "error";
          note.textContent = t;
        });
      })
      .finally(function () {
        buttons.forEach(function (b) { b.disabled = false; });
        form.insertAdjacentElement("afterend", note);
      });
  });
})();
