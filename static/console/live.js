// Live updates: tells the console websocket what the current page shows and shows the link state.
// htmx's ws extension owns the socket; this sends "watch" messages, keeps the revision the page is
// current at (so a reconnect resumes from it: nothing missed, nothing twice), reconnects with
// backoff whenever the socket drops, drops pushes meant for what the page showed before, and turns
// off a runtime page's actions once the runtime is deleted.
(function () {
  "use strict";
  var socket = null; // htmx's socket wrapper, while open
  var watched = null; // what the last watch asked for: view, query, the page's revision, key
  var delivered = 0; // the revision the page is current at
  var key = 0; // numbers the watches; each push names the one it answers
  var opened = false; // the socket was open once: a new connection is a reconnect
  var attempts = 0; // reconnects of ours since the socket was last open
  var retry = null;
  var focused = null; // the id of the element with focus, kept across a push
  var folded = null; // whether the user had the filter panel open, kept across a push
  var filtering = 0; // filter requests in flight whose answer replaces the results block

  // 0.5 s doubling to 15 s, each wait drawn from its upper half (jitter), for htmx's own
  // reconnects (after 1006, 1011, 1012, 1013) and for ours (after any other drop).
  function backoff(n) {
    var ceiling = Math.min(15000, 500 * Math.pow(2, n));
    return ceiling / 2 + Math.random() * ceiling / 2;
  }
  if (window.htmx) window.htmx.config.wsReconnectDelay = backoff;
  var RETRIED_BY_HTMX = [1006, 1011, 1012, 1013];

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
      if (watched) socket.send(JSON.stringify({ type: "unwatch" }), null);
      watched = null;
      return;
    }
    var same = watched && watched.view === spec.view && watched.query === spec.query && watched.revision === spec.revision;
    if (same && !resume) return;
    if (!same) delivered = spec.revision; // a new page: its own snapshot is the starting point
    key += 1;
    watched = { view: spec.view, query: spec.query, revision: spec.revision, key: key };
    socket.send(JSON.stringify({ type: "watch", view: spec.view, query: spec.query, revision: delivered, ids: spec.ids, key: key }), null);
  }

  document.addEventListener("htmx:wsConnecting", function () {
    indicator(opened ? "reconnecting" : "connecting", opened ? "reconnecting…" : "connecting");
  });
  document.addEventListener("htmx:wsOpen", function (event) {
    socket = event.detail.socketWrapper;
    opened = true;
    attempts = 0;
    indicator("live", "live");
    send(true); // after a reconnect: resume from the revision the page is current at
  });
  // The server closes the socket with these codes once the user's access is gone
  // (runtimes/console/consumers.py); nothing reconnects after them, so say why.
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
    var code = close ? close.code : 0;
    socket = null;
    if (ENDED[code]) {
      ended(ENDED[code]);
      return;
    }
    indicator("reconnecting", "reconnecting…");
    var wrapper = event.detail && event.detail.socketWrapper;
    if (RETRIED_BY_HTMX.indexOf(code) >= 0 || !wrapper || retry) return;
    // A clean close (a proxy or the server going away, a dropped connection closed by the
    // page): htmx would leave it down.
    retry = setTimeout(function () {
      retry = null;
      wrapper.reconnect();
    }, backoff(attempts++));
  });

  // A push answers one watch (its revision marker says which); one for what the page showed
  // before (a filter change, a navigation) would draw the old view over the new: drop it.
  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    var message = String(event.detail.message);
    var at = message.lastIndexOf('data-watch="');
    var spec = currentSpec();
    if (at >= 0) {
      var answers = parseInt(message.slice(at + 'data-watch="'.length), 10);
      if (!watched || !spec || answers !== watched.key || spec.view !== watched.view || spec.query !== watched.query) {
        event.preventDefault();
        return;
      }
    }
    // While a filter change is being answered, a push is for the filters the page had: it would
    // replace the block the answer is meant for (and the answer would be lost). The answer
    // brings a block and a watch of its own; if it fails, the page resumes its watch below.
    if (filtering > 0 && message.indexOf('id="results"') >= 0) {
      event.preventDefault();
      return;
    }
    var active = document.activeElement;
    focused = active && active !== document.body && active.id ? active.id : null;
    var panel = document.querySelector(".facet-panel");
    folded = panel ? !panel.open : null;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    var marker = document.getElementById("live-revision");
    if (marker) delivered = Math.max(delivered, Number(marker.dataset.revision || 0));
    var spec = currentSpec();
    if (watched && spec) watched.revision = spec.revision; // a redrawn block carries its own
    // A redrawn block replaces the element that had focus: give it to its successor.
    if (focused && (!document.activeElement || document.activeElement === document.body)) {
      var again = document.getElementById(focused);
      if (again) again.focus();
    }
    focused = null;
    var panel = document.querySelector(".facet-panel");
    if (panel && folded !== null) panel.open = !folded;
    folded = null;
    turnOffDeletedRuntime();
  });
  function answersFilters(event) {
    var target = event.detail && event.detail.target;
    return Boolean(target && target.id === "results");
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (answersFilters(event)) filtering += 1;
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (!answersFilters(event)) return;
    filtering = Math.max(0, filtering - 1);
    // Not answered: the pushes dropped meanwhile are asked for again, from the revision shown.
    if (!event.detail.successful) send(true);
  });
  // Every navigation or filter change swaps content in; watch what is now on screen.
  document.addEventListener("htmx:afterSettle", function () { send(false); });

  // A runtime page whose runtime was deleted (the pushed header says so): its forms and
  // downloads need the runtime, so they stop; copy buttons keep working on what is shown.
  function turnOffDeletedRuntime() {
    var main = document.getElementById("main");
    if (!main || !document.querySelector("#runtime-header[data-deleted]")) return;
    main.querySelectorAll("form").forEach(function (form) {
      form.setAttribute("hx-disable", "");
      Array.prototype.forEach.call(form.elements, function (control) {
        if (!control.matches("[data-copy]")) control.disabled = true;
      });
    });
    main.querySelectorAll("a[download], [data-create-job]").forEach(function (action) {
      action.removeAttribute("href");
      action.setAttribute("aria-disabled", "true");
      if ("disabled" in action) action.disabled = true;
    });
  }
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
    // What to do about it, and the id to quote to the platform team.
    if (answer.body.fix) {
      var fix = document.createElement("p");
      fix.textContent = answer.body.fix;
      result.appendChild(fix);
    }
    if (answer.body.requestId) {
      var id = document.createElement("p");
      id.className = "muted";
      id.textContent = "Request id: " + answer.body.requestId;
      result.appendChild(id);
    }
  }).catch(function () {
    var result = document.getElementById("create-job-result");
    if (!result) return;
    result.className = "small notice bad";
    result.textContent = "The API could not be reached; try again.";
  }).finally(function () { button.disabled = false; });
});
