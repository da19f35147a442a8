// The Parameters form (a runtime's Parameters tab): its state in the address, the error
// summary, and the focus after structural edits. The server does the rest; see
// runtimes/console/parameters.py and runtimes/console/forms/url_state.py.
(function () {
  "use strict";

  // Fields that are the form's bookkeeping for one request, not its state.
  var TRANSIENT = { _shape: true, _choices: true, _op: true, _submit: true, _offers: true, csrfmiddlewaretoken: true };
  var submitting = false;
  // The address takes the form's state once the user has changed something on this page: a
  // live update (the header's websocket push) does not rewrite the address of a fresh form.
  var touchedPath = null;

  function paramForm() {
    return document.getElementById("param-form");
  }

  // Every field the form would post, as a query string: the server reads it back on load.
  function stateQuery(form) {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (TRANSIENT[name] || typeof value !== "string") return;
      params.append(name, value);
    });
    return params.toString();
  }

  function remember(form) {
    var query = stateQuery(form);
    var note = document.getElementById("param-url-note");
    var fits = query.length <= Number(form.dataset.maxQuery || 8192);
    if (note) note.hidden = fits;
    if (!fits) return;
    var url = location.pathname + (query ? "?" + query : "");
    if (url !== location.pathname + location.search) history.replaceState(history.state, "", url);
  }

  // aria-invalid follows the error line each check swaps in beside a control (the Parameters and
  // the Estimates forms alike).
  function syncInvalid(form) {
    form.querySelectorAll(".field-error[id^='err-']").forEach(function (line) {
      var control = document.getElementById(line.id.slice(4));
      if (!control || !/^(INPUT|SELECT|TEXTAREA)$/.test(control.tagName)) return;
      if (line.textContent.trim()) control.setAttribute("aria-invalid", "true");
      else control.removeAttribute("aria-invalid");
    });
  }

  function focusable(element) {
    if (element.matches("input:not([type=hidden]), select, textarea, button")) return element;
    return element.querySelector("input:not([type=hidden]):not([disabled]), select, textarea") || element;
  }

  function onChange(event) {
    var form = event.target.closest && event.target.closest("#param-form");
    if (!form) return;
    touchedPath = location.pathname;
    remember(form);
  }
  document.addEventListener("input", onChange);
  document.addEventListener("change", onChange);

  // After a check, empty required inputs stay errors while the user goes on (the server draws
  // the same marker into a redrawn form).
  document.addEventListener("submit", function (event) {
    var form = paramForm();
    if (event.target !== form) return;
    submitting = true;
    if (!form.querySelector("input[type=hidden][name=_submit]")) {
      var marker = document.createElement("input");
      marker.type = "hidden";
      marker.name = "_submit";
      marker.value = "1";
      form.appendChild(marker);
    }
  }, true);

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.closest && elt.closest("#param-form")) touchedPath = location.pathname;
  });

  document.addEventListener("htmx:afterSettle", function () {
    var estimates = document.getElementById("estimate-form");
    if (estimates) syncInvalid(estimates);
    var form = paramForm();
    if (!form) return;
    if (touchedPath === location.pathname) remember(form);
    syncInvalid(form);
    var summary = document.getElementById("error-summary");
    if (submitting && summary && !summary.hidden) summary.focus();
    submitting = false;
    // An item just added: htmx focuses [autofocus] in swapped content; a group gets its field.
    var added = form.querySelector("[autofocus]");
    if (!added) return;
    added.removeAttribute("autofocus"); // once: later swaps elsewhere must not pull focus back
    if (document.activeElement !== added) focusable(added).focus();
  });

  // A summary link moves the focus to its field (a plain #fragment only scrolls to a group, and
  // would put the fragment into the address, which holds the form's state).
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("#error-summary a[data-field]");
    if (!link) return;
    var target = document.getElementById(link.dataset.field);
    if (!target) return;
    event.preventDefault();
    var control = focusable(target);
    if (control === target && !target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    var label = document.querySelector("label[for='" + control.id + "']");
    (label || control).scrollIntoView({ block: "center" });
    control.focus({ preventScroll: true });
  });
})();

// The hardware choice (templates/_partials/_offerings.html): "Plan on <variant>" makes that
// offering the plan by choosing its variant in the Accelerator menu, and the form checks again.
// The phone summary's Create job (_partials/_plan_summary.html) presses the panel's own button.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var target = event.target.closest && event.target.closest("[data-plan-accelerator], [data-press]");
    if (!target) return;
    if (target.dataset.press) {
      var pressed = document.querySelector(target.dataset.press);
      if (pressed && !pressed.disabled) pressed.click();
      return;
    }
    var menu = document.getElementById("job-accelerator");
    if (!menu) return;
    var value = target.dataset.planAccelerator;
    if (!Array.prototype.some.call(menu.options, function (o) { return o.value === value; })) {
      menu.appendChild(new Option(value, value));
    }
    menu.value = value;
    menu.dispatchEvent(new Event("input", { bubbles: true }));
    menu.dispatchEvent(new Event("change", { bubbles: true }));
  });
})();
