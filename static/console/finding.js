// Finding things and seeing failures: the "/" search shortcut, focus after a filter chip is
// cleared, toasts for every failure a page would otherwise swallow (network, server, websocket,
// clipboard) with the server's request id, and copy buttons. Loaded on every page (base.html).
(function () {
  "use strict";
  var MAX_TOASTS = 4; // older toasts make room: the region never grows without bound

  function notices() { return document.getElementById("notices"); }

  // Shows a toast; `key` replaces an earlier toast with the same key instead of adding one.
  function toast(text, options) {
    options = options || {};
    var region = notices();
    if (!region) return null;
    if (options.key) {
      var old = region.querySelector('[data-key="' + options.key + '"]');
      if (old) old.remove();
    }
    var item = document.createElement("div");
    item.className = "toast " + (options.kind || "error");
    if (options.key) item.dataset.key = options.key;
    var message = document.createElement("p");
    message.textContent = text;
    item.appendChild(message);
    if (options.requestId) {
      var id = document.createElement("p");
      id.className = "small request-id";
      id.appendChild(document.createTextNode("Request id "));
      var code = document.createElement("code");
      code.textContent = options.requestId;
      id.appendChild(code);
      id.appendChild(document.createTextNode(": tell the platform team if it persists."));
      item.appendChild(id);
    }
    var close = document.createElement("button");
    close.type = "button";
    close.className = "toast-close";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "×";
    item.appendChild(close);
    region.appendChild(item);
    while (region.children.length > MAX_TOASTS) region.firstElementChild.remove();
    return item;
  }
  window.nodusToast = toast;

  document.addEventListener("click", function (event) {
    var close = event.target.closest && event.target.closest(".toast-close");
    if (close) close.closest(".toast").remove();
  });

  // Messages rendered with a full page are already in the live region when it loads, which
  // screen readers do not announce: put them back in a frame later.
  var messages = document.getElementById("messages");
  if (messages && messages.children.length) {
    var shown = Array.prototype.slice.call(messages.children);
    messages.textContent = "";
    requestAnimationFrame(function () { shown.forEach(function (n) { messages.appendChild(n); }); });
  }

  // --- failures -------------------------------------------------------------------------------

  function requestIdOf(xhr) {
    var id = xhr.getResponseHeader("X-Request-Id");
    if (id) return id;
    try { return JSON.parse(xhr.responseText).requestId || ""; } catch (e) { return ""; }
  }

  function describe(status) {
    if (status >= 500) return "The server failed (HTTP " + status + "). Nothing was changed; try again.";
    if (status === 429) return "Too many requests (HTTP 429): wait a moment, then try again.";
    if (status === 404) return "Not found (HTTP 404): it may have been deleted or renamed.";
    if (status === 403) return "You may not do that (HTTP 403).";
    if (status === 401) return "You are no longer signed in (HTTP 401): sign in again.";
    return "The server refused the request (HTTP " + status + ").";
  }

  document.addEventListener("htmx:sendError", function () {
    toast("Could not reach the server: check your connection or whether the server is up, then try again.", { key: "network" });
  });
  document.addEventListener("htmx:timeout", function () {
    toast("The server took too long to answer; try again.", { key: "network" });
  });
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    toast(describe(xhr.status), { requestId: requestIdOf(xhr) });
  });
  // htmx reconnects the socket by itself; say once that live updates are paused, and take it
  // back when they resume. Closes that end the session are explained by live.js.
  document.addEventListener("htmx:wsClose", function (event) {
    var close = event.detail && event.detail.event;
    if (close && (close.code === 4401 || close.code === 4403)) return;
    toast("Live updates lost: the connection to the server closed. Reconnecting…", { key: "live", kind: "warn" });
  });
  document.addEventListener("htmx:wsOpen", function () {
    var lost = notices() && notices().querySelector('[data-key="live"]');
    if (lost) lost.remove();
  });
  // A page restored from history must not replay the toasts it showed back then.
  document.addEventListener("htmx:beforeHistorySave", function () {
    var messages = document.getElementById("messages");
    if (messages) messages.textContent = "";
    if (notices()) notices().textContent = "";
  });

  // --- copy buttons: <button data-copy="#selector"> copies that element's text -----------------

  function refused(source, why) {
    var selection = window.getSelection();
    if (selection) selection.selectAllChildren(source); // selected, ready for Ctrl+C
    toast(why + " The text is selected: copy it with Ctrl+C (⌘C).", { key: "clipboard" });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.dataset.copy);
    if (!source) return;
    if (!navigator.clipboard) {
      refused(source, "This browser does not let the page copy here (it needs HTTPS or localhost).");
      return;
    }
    navigator.clipboard.writeText(source.textContent).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    }, function () {
      refused(source, "The browser refused to copy to the clipboard.");
    });
  });

  // --- finding things -------------------------------------------------------------------------

  function typing(target) {
    if (!target || !target.closest) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable]:not([contenteditable=false])"));
  }

  // "/" focuses the page's search box, unless the user is typing somewhere.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    var search = document.querySelector('[aria-keyshortcuts="/"]');
    if (!search) return;
    event.preventDefault();
    search.focus();
    if (search.select) search.select();
  });

  // A cleared filter chip disappears with the swap: keep focus on the chips (or the count).
  var chipCleared = false;
  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-chip-clear]")) chipCleared = true;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!chipCleared) return;
    chipCleared = false;
    var next = document.querySelector(".chip-clear") || document.getElementById("result-count");
    if (next) next.focus();
  });
})();
