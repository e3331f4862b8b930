// The Gate inbox's behaviours: the header's live count of open Gates (every page), a browser notification when a
// Gate opens (only once the user asked for it with a click), and the inbox's keys and selection. Everything it
// shows comes from the server; it adds no state of its own beyond the user's choice to be notified.
(function () {
  "use strict";

  var NOTIFY_KEY = "jr2.notifyGates";

  function wsUrl(path) {
    return (window.location.protocol === "https:" ? "wss://" : "ws://") + window.location.host + path;
  }

  // -- the header's count, on every page ---------------------------------------------------------------------

  function countSocket() {
    var counter = document.getElementById("gate-count-n");
    if (!counter || !window.WebSocket) return;
    var delay = 1000;
    function open() {
      var socket = new WebSocket(wsUrl("/ws/gates/count/"));
      socket.addEventListener("open", function () { delay = 1000; });
      socket.addEventListener("message", function (message) {
        var data = JSON.parse(message.data);
        counter.textContent = String(data.open);
        counter.classList.toggle("some", data.open > 0);
        (data.opened || []).forEach(notify);
      });
      socket.addEventListener("close", function (event) {
        if (event.code === 4403) return;
        window.setTimeout(open, delay);
        delay = Math.min(delay * 2, 30000);
      });
    }
    open();
  }

  function notificationsOn() {
    return "Notification" in window && Notification.permission === "granted" &&
      window.localStorage.getItem(NOTIFY_KEY) === "1";
  }

  function notify(gate) {
    if (!notificationsOn()) return;
    var shown = new Notification("A Gate opened: " + gate.gate, {
      body: gate.workflow + " \u00b7 run " + gate.run, tag: "jr2-gate-" + gate.run + "-" + gate.gate
    });
    shown.addEventListener("click", function () {
      window.focus();
      window.location.assign("/runs/" + encodeURIComponent(gate.run) + "/");
    });
  }

  // The inbox's "Notify me" button: the browser asks for permission only after this click.
  function notifyToggle() {
    var button = document.getElementById("notify-toggle");
    if (!button || !("Notification" in window)) return;
    function label() {
      if (Notification.permission === "denied") {
        button.textContent = "Notifications are blocked in this browser";
        button.disabled = true;
      } else {
        button.textContent = notificationsOn() ? "Stop notifying me" : "Notify me of new Gates";
      }
    }
    button.hidden = false;
    label();
    button.addEventListener("click", function () {
      if (notificationsOn()) {
        window.localStorage.removeItem(NOTIFY_KEY);
        label();
        return;
      }
      Notification.requestPermission().then(function (answer) {
        if (answer === "granted") window.localStorage.setItem(NOTIFY_KEY, "1");
        label();
      });
    });
  }

  // -- the inbox: keys and selection -------------------------------------------------------------------------

  function inbox() {
    var root = document.getElementById("inbox");
    if (!root) return;
    var current = null;

    function items() {
      return Array.prototype.slice.call(root.querySelectorAll("article.inbox-item"));
    }

    function setCurrent(item) {
      if (current) current.classList.remove("current");
      current = item;
      if (!item) return;
      item.classList.add("current");
      item.focus({ preventScroll: true });
      item.scrollIntoView({ block: "nearest" });
    }

    function move(step) {
      var list = items();
      if (!list.length) return;
      var at = current && document.body.contains(current) ? list.indexOf(current) : -1;
      var next = at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(Math.max(at + step, 0), list.length - 1);
      setCurrent(list[next]);
    }

    function typing(element) {
      return element && (element.tagName === "TEXTAREA" || element.tagName === "INPUT" ||
        element.tagName === "SELECT" || element.isContentEditable);
    }

    function firstField(selector) {
      var field = current && current.querySelector(selector);
      if (field) field.focus();
      return !!field;
    }

    document.addEventListener("keydown", function (event) {
      var target = event.target;
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        var form = target.closest ? target.closest("#inbox form.inbox-form") : null;
        if (form) {
          event.preventDefault();
          form.requestSubmit();
        }
        return;
      }
      if (event.key === "Escape" && typing(target) && target.closest("#inbox article.inbox-item")) {
        target.blur();
        setCurrent(target.closest("article.inbox-item"));
        return;
      }
      if (typing(target) || event.ctrlKey || event.metaKey || event.altKey) return;
      var onList = target === document.body || (target.matches && target.matches("article.inbox-item"));
      if (event.key === "j" || event.key === "k") {
        event.preventDefault();
        move(event.key === "j" ? 1 : -1);
      } else if (event.key === "Enter" && onList && current) {
        if (firstField("form.inbox-form textarea, form.inbox-form input:not([type=hidden]), form.inbox-form select")) {
          event.preventDefault();
        }
      } else if (event.key === "r" && onList && current) {
        if (firstField("form.rejecting [name=reason]")) event.preventDefault();
      } else if (event.key === "x" && onList && current) {
        var box = current.querySelector(".inbox-select");
        if (box) {
          event.preventDefault();
          box.checked = !box.checked;
          selectionChanged();
        }
      }
    });

    root.addEventListener("click", function (event) {
      var item = event.target.closest("article.inbox-item");
      if (item && item !== current) {
        if (current) current.classList.remove("current");
        current = item;
        item.classList.add("current");
      }
    });

    function selected() {
      return Array.prototype.slice.call(root.querySelectorAll("article.inbox-item .inbox-select:checked"));
    }

    function kindsOf(boxes) {
      var kinds = [];
      boxes.forEach(function (box) {
        var kind = box.closest("article").dataset.kind;
        if (kinds.indexOf(kind) < 0) kinds.push(kind);
      });
      return kinds;
    }

    // The selection says what a send will do: a send from a selected Gate goes to every selected Gate.
    function selectionChanged() {
      var boxes = selected();
      var kinds = kindsOf(boxes);
      var note = document.getElementById("inbox-selection");
      if (note) {
        note.textContent = !boxes.length ? "" : kinds.length > 1
          ? boxes.length + " selected, of " + kinds.length + " kinds: select Gates of one kind to answer them together."
          : boxes.length + " selected (" + kinds[0] + "): send from any of them and the answer goes to each.";
      }
      items().forEach(function (item) {
        var box = item.querySelector(".inbox-select");
        var together = box && box.checked && kinds.length === 1 ? boxes.length : 1;
        item.classList.toggle("selected", !!(box && box.checked));
        item.querySelectorAll("button.send").forEach(function (button) {
          button.textContent = together > 1 ? button.dataset.label + " to " + together + " Gates"
            : button.dataset.label;
        });
      });
    }

    root.addEventListener("change", function (event) {
      if (event.target.classList.contains("inbox-select")) selectionChanged();
    });

    // A form of a selected Gate is sent for every selected Gate: one more `gate` for each of the others.
    root.addEventListener("htmx:configRequest", function (event) {
      var form = event.target.closest ? event.target.closest("form.inbox-form") : null;
      var item = form ? form.closest("article.inbox-item") : null;
      var own = item ? item.querySelector(".inbox-select") : null;
      if (!own || !own.checked) return;
      selected().forEach(function (box) {
        if (box !== own) event.detail.formData.append("gate", box.value);
      });
    });

    // While an answer is on its way, the live socket leaves its Gates alone: replacing one would take away the
    // form whose answer is coming back (htmx drops an answer to a form no longer in the page), and that answer
    // brings each Gate's own end (delivered, or closed and by whom).
    var responding = false;
    root.addEventListener("htmx:beforeRequest", function (event) {
      var form = event.target.closest ? event.target.closest("form.inbox-form") : null;
      if (!form) return;
      var own = form.closest("article.inbox-item");
      var box = own.querySelector(".inbox-select");
      own.classList.add("sending");
      if (box && box.checked) {
        selected().forEach(function (other) { other.closest("article").classList.add("sending"); });
      }
    });
    root.addEventListener("htmx:beforeOnLoad", function () { responding = true; });
    function answered() {
      responding = false;
      root.querySelectorAll("article.sending").forEach(function (item) { item.classList.remove("sending"); });
    }
    root.addEventListener("htmx:afterOnLoad", answered);
    root.addEventListener("htmx:afterRequest", answered);
    document.body.addEventListener("htmx:oobBeforeSwap", function (event) {
      var target = event.detail.target;
      if (!responding && target && target.classList && target.classList.contains("sending")) {
        event.detail.shouldSwap = false;
      }
    });

    // Answered or closed items leave the selection.
    document.body.addEventListener("htmx:oobAfterSwap", selectionChanged);
  }

  document.addEventListener("DOMContentLoaded", function () {
    countSocket();
    notifyToggle();
    inbox();
  });
})();
