// Live updates: tells the console websocket what the current page shows and shows the link state.
// htmx's ws extension owns the socket (and reconnects it); this only sends "watch" messages.
(function () {
  "use strict";
  var socket = null;
  var watched = null; // the #live-watch spec last sent: view + query + the page's revision
  var delivered = 0; // the last revision the server pushed to us

  function indicator(state, text) {
    var live = document.getElementById("live");
    if (!live) return;
    live.dataset.state = state;
    var label = live.querySelector(".live-text");
    if (label) label.textContent = text;
  }

  function currentSpec() {
    var el = document.getElementById("live-watch");
    if (!el) return null;
    var ids = Array.prototype.map.call(document.querySelectorAll("[data-live][id]"), function (n) { return n.id; });
    return { view: el.dataset.view, query: el.dataset.query || "", revision: Number(el.dataset.revision || 0), ids: ids };
  }

  function send(resume) {
    if (!socket) return;
    var spec = currentSpec();
    if (!spec) {
      watched = null;
      socket.send(JSON.stringify({ type: "unwatch" }), null);
      return;
    }
    var same = watched && watched.view === spec.view && watched.query === spec.query && watched.revision === spec.revision;
    if (same && !resume) return;
    if (!same) delivered = spec.revision; // a new page: its own snapshot is the starting point
    watched = spec;
    socket.send(JSON.stringify({ type: "watch", view: spec.view, query: spec.query, revision: delivered, ids: spec.ids }), null);
  }

  document.addEventListener("htmx:wsConnecting", function () {
    indicator(delivered ? "reconnecting" : "connecting", delivered ? "reconnecting…" : "connecting");
  });
  document.addEventListener("htmx:wsOpen", function (event) {
    socket = event.detail.socketWrapper;
    indicator("live", "live");
    send(true); // after a reconnect: resume from the last revision delivered
  });
  // The server closes the socket with these codes once the user's access is gone
  // (runtimes/console/consumers.py); htmx does not reconnect after them, so say why.
  var ENDED = {
    4401: {
      text: "Live updates stopped: you are no longer signed in (you signed out, your password changed or your account was deactivated).",
      link: "Sign in again",
      href: function () { return "/login?next=" + encodeURIComponent(location.pathname + location.search); }
    },
    4403: {
      text: "Live updates stopped: your access changed (a project role was removed or lowered).",
      link: "Reload to see what you may still see",
      href: function () { return location.href; }
    }
  };

  function ended(why) {
    indicator("closed", "offline");
    var notice = document.getElementById("live-notice");
    if (!notice) return;
    notice.setAttribute("role", "alert");
    notice.dataset.ended = "true";
    notice.textContent = why.text + " ";
    var link = document.createElement("a");
    link.href = why.href();
    link.textContent = why.link;
    notice.appendChild(link);
  }

  document.addEventListener("htmx:wsClose", function (event) {
    var close = event.detail && event.detail.event;
    var why = close && ENDED[close.code];
    if (why) {
      socket = null;
      ended(why);
      return;
    }
    indicator("reconnecting", "reconnecting…");
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    var marker = document.getElementById("live-revision");
    if (marker) delivered = Math.max(delivered, Number(marker.dataset.revision || 0));
  });
  // Every navigation or filter change swaps content in; watch what is now on screen.
  document.addEventListener("htmx:afterSettle", function () { send(false); });
})();

// "line N" buttons beside a publish cause select that line in the manifest editor.
document.addEventListener("click", function (event) {
  var button = event.target.closest && event.target.closest("[data-goto-line]");
  var editor = document.getElementById("publish-manifest");
  if (!button || !editor) return;
  var lines = editor.value.split("\n");
  var line = Math.min(Number(button.dataset.gotoLine), lines.length) - 1;
  var start = lines.slice(0, line).join("\n").length + (line > 0 ? 1 : 0);
  editor.focus();
  editor.setSelectionRange(start, start + lines[line].length);
  editor.scrollTop = Math.max(0, line - 3) * parseFloat(getComputedStyle(editor).lineHeight || "18");
});

// On narrow screens the filter panel starts folded, so the results come first.
document.addEventListener("htmx:load", function (event) {
  var panel = event.target.querySelector && event.target.querySelector(".facet-panel");
  if (panel && window.matchMedia("(max-width: 800px)").matches && !location.search) panel.open = false;
});

// "Create job" on a runtime's Parameters tab: POSTs the manifest shown beside it to the API,
// as the signed-in user (session and CSRF token), and says what the API answered.
document.addEventListener("click", function (event) {
  var button = event.target.closest && event.target.closest("[data-create-job]");
  if (!button) return;
  if (!button.dataset.body || !document.getElementById("create-job-result")) return;
  var headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
  var jobs = button.dataset.jobs;
  button.disabled = true;
  document.getElementById("create-job-result").textContent = "Creating…";
  fetch(button.dataset.createJob, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": headers["X-CSRFToken"] || "" },
    body: button.dataset.body
  }).then(function (response) {
    return response.json().then(function (body) { return { status: response.status, body: body }; });
  }).then(function (answer) {
    // Looked up again: the output panel may have been redrawn while the request was out.
    var result = document.getElementById("create-job-result");
    if (!result) return;
    result.textContent = "";
    if (answer.status === 201) {
      var name = answer.body.metadata.name;
      result.className = "small notice ok";
      result.appendChild(document.createTextNode("Created job " + name + ": "));
      var link = document.createElement("a");
      link.href = jobs + "/" + encodeURIComponent(name);
      link.textContent = "open it";
      result.appendChild(link);
      result.appendChild(document.createTextNode(" or see all "));
      var all = document.createElement("a");
      all.href = jobs;
      all.textContent = "jobs";
      result.appendChild(all);
      return;
    }
    result.className = "small notice bad";
    result.appendChild(document.createTextNode(answer.body.message || ("HTTP " + answer.status)));
    var causes = (answer.body.details && answer.body.details.causes) || [];
    if (causes.length) {
      var list = document.createElement("ul");
      causes.forEach(function (cause) {
        var item = document.createElement("li");
        item.textContent = (cause.field ? cause.field + ": " : "") + cause.message;
        list.appendChild(item);
      });
      result.appendChild(list);
    }
  }).catch(function () {
    var result = document.getElementById("create-job-result");
    if (!result) return;
    result.className = "small notice bad";
    result.textContent = "The API could not be reached; try again.";
  }).finally(function () { button.disabled = false; });
});
