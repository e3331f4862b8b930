// The Console's few behaviours beyond htmx: light the run's states on the graph, open a state's details when it is
// clicked, and drive the replay controls. No framework; everything it reads comes from the server's HTML.
(function () {
  "use strict";

  function groupFor(path) {
    return document.getElementById("state-" + path);
  }

  // #run-lit carries the active and visited states (space-separated dotted paths); it is swapped in live.
  function applyLit() {
    var lit = document.getElementById("run-lit");
    if (!lit) return;
    var active = (lit.dataset.active || "").split(" ").filter(Boolean);
    var visited = (lit.dataset.visited || "").split(" ").filter(Boolean);
    document.querySelectorAll("#graph g.active, #graph g.visited").forEach(function (g) {
      g.classList.remove("active", "visited");
    });
    visited.forEach(function (p) { var g = groupFor(p); if (g) g.classList.add("visited"); });
    active.forEach(function (p) { var g = groupFor(p); if (g) g.classList.add("active"); });
  }

  // The clicked state is marked on the graph (class "selected") and kept in the URL (?state=<dotted path>), so a
  // reload, a link or the back button shows the same state; a redrawn graph (a fold) gets the mark again.
  function markSelected(path) {
    document.querySelectorAll("#graph g.selected").forEach(function (g) { g.classList.remove("selected"); });
    var g = path === null ? null : groupFor(path);
    if (g) {
      g.classList.add("selected");
      g.setAttribute("aria-current", "true");
    }
    return g;
  }

  function selectedPath() {
    return new URL(window.location.href).searchParams.get("state");
  }

  function stateClicks() {
    var graph = document.getElementById("graph");
    if (!graph) return;
    if (markSelected(selectedPath())) {
      var opened = document.getElementById("detail-" + selectedPath());
      if (opened) opened.open = true;
    }
    document.addEventListener("jr2:graphdrawn", function () { markSelected(selectedPath()); });
    graph.addEventListener("click", function (event) {
      if (event.target.closest(".fold-toggle, .child-machine")) return;
      var g = event.target.closest('g[id^="state-"]');
      if (!g) return;
      var path = g.id.slice("state-".length);
      markSelected(path);
      var url = new URL(window.location.href);
      url.searchParams.set("state", path);
      window.history.replaceState(window.history.state, "", url.toString());
      var detail = document.getElementById("detail-" + path);
      if (detail) {
        detail.open = true;
        detail.scrollIntoView({ behavior: "smooth", block: "center" });
      }
    });
  }

  // Replay (templates/console/replay/_panes.html): a step is fetched with htmx and only the panes are swapped, the
  // URL kept in the history; the slider, play and the arrow keys (← previous, → next) go the same way.
  var playTimer = null;
  var keyTarget = null;  // the step the arrow keys last asked for, until it is shown
  var inFlight = false;  // one step at a time: htmx drops a second request to the same panes
  var pending = null;  // the step asked for while another was on its way; fetched when that one is shown

  function stepOf(url) {
    return url.searchParams.get("step");
  }

  function historySource() {
    var source = document.getElementById("replay-history");
    if (source === null) {
      source = document.createElement("span");
      source.id = "replay-history";
      source.hidden = true;
      source.setAttribute("hx-push-url", "true");
      document.body.appendChild(source);
    }
    return source;
  }

  function replayStep(url, tries) {
    if (!window.htmx) { window.location.assign(url.toString()); return; }
    if (inFlight) { pending = url; return; }
    inFlight = true;
    var done = function () {
      inFlight = false;
      var panes = document.getElementById("replay-panes");
      var shown = panes !== null && panes.dataset.step === stepOf(url);
      replayControls();
      var next = pending;
      pending = null;
      if (next !== null) { replayStep(next); return; }
      if (!shown && (tries || 0) < 20) {
        // another request (a boosted step link) held the panes: ask again once the event loop has turned
        window.setTimeout(function () { replayStep(url, (tries || 0) + 1); }, 50);
        return;
      }
      keyTarget = null;
    };
    // htmx pushes the step's URL itself (the source says hx-push-url), so that its history cache, which back and
    // forward restore from, keeps each step under its own URL
    window.htmx.ajax("GET", url.toString(), {
      source: historySource(), target: "#replay-panes", select: "#replay-panes", swap: "outerHTML show:none",
    }).then(done, done);
  }

  // The play timer of the panes shown: a step ahead after 1/speed seconds, while the URL says play.
  function replayControls() {
    var slider = document.getElementById("step-slider");
    if (playTimer !== null) { window.clearTimeout(playTimer); playTimer = null; }
    if (!slider) return;
    var url = new URL(window.location.href);
    var playing = url.searchParams.get("play");
    if (!playing) return;
    document.getElementById("play-speed").value = playing;
    document.getElementById("play").textContent = "\u23F8 pause";
    var step = parseInt(slider.value, 10);
    if (step >= parseInt(slider.max, 10)) return;
    playTimer = window.setTimeout(function () {
      playTimer = null;
      url.searchParams.set("step", String(step + 1));
      replayStep(url);
    }, 1000 / parseFloat(playing));
  }

  // The slider and play are listened to on the document, so panes just swapped in answer at once (a listener
  // bound after htmx settles missed a slider moved in between).
  function replayChange(event) {
    if (!event.target || event.target.id !== "step-slider") return;
    var url = new URL(window.location.href);
    url.searchParams.set("step", event.target.value);
    url.searchParams.delete("play");
    replayStep(url);
  }

  function replayPlay(event) {
    var play = event.target.closest && event.target.closest("#play");
    if (!play) return;
    var url = new URL(window.location.href);
    var slider = document.getElementById("step-slider");
    if (url.searchParams.get("play")) {
      url.searchParams.delete("play");
    } else {
      url.searchParams.set("play", document.getElementById("play-speed").value);
      if (parseInt(slider.value, 10) >= parseInt(slider.max, 10)) url.searchParams.set("step", "1");
    }
    replayStep(url);
  }

  // ← and → step the replay, unless a field has the keyboard or a modifier is held (the browser's own keys).
  function replayKeys(event) {
    if (!document.getElementById("replay-panes")) return;
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.defaultPrevented) return;
    var field = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
    if (field && field.id !== "step-slider") return;
    var link = event.key === "ArrowLeft" ? document.getElementById("step-prev")
      : event.key === "ArrowRight" ? document.getElementById("step-next") : null;
    if (!link) return;
    event.preventDefault();
    var panes = document.getElementById("replay-panes");
    // keys pressed faster than the steps arrive count from the step last asked for, not the one shown
    var step = keyTarget !== null ? keyTarget : parseInt(panes.dataset.step, 10);
    var last = parseInt(panes.dataset.steps, 10);
    if ((event.key === "ArrowLeft" && step <= 1) || (event.key === "ArrowRight" && step >= last)) return;
    keyTarget = event.key === "ArrowLeft" ? step - 1 : step + 1;
    var url = new URL(window.location.href);
    url.searchParams.set("step", String(keyTarget));
    url.searchParams.delete("play");
    replayStep(url);
  }

  // A live region swapped in while someone fills one of its forms keeps what they typed. The socket sends every
  // region on connect: a region whose markup is unchanged (its CSRF tokens aside) is not swapped at all, so a
  // click on its button is not lost either; a changed one gets the edited fields back into the same forms.
  var keptFields = {};  // region id -> its edited fields, from before its swap to after it

  function fieldKey(field) {
    var form = field.form;
    var where = form ? (form.getAttribute("action") || "") + "|" + (form.dataset.event || "") : "";
    return where + "|" + field.name;
  }

  function editedFields(region) {
    var kept = [];
    region.querySelectorAll("input, textarea, select").forEach(function (field) {
      if (!field.name || field.type === "hidden" || field.type === "file") return;
      var box = field.type === "checkbox" || field.type === "radio";
      var changed = box ? field.checked !== field.defaultChecked
        : field.tagName === "SELECT"
          ? Array.prototype.some.call(field.options, function (o) { return o.selected !== o.defaultSelected; })
          : field.value !== field.defaultValue;
      if (changed) {
        kept.push({ key: fieldKey(field), value: field.value, checked: field.checked, box: box,
          focused: document.activeElement === field });
      }
    });
    return kept;
  }

  function comparable(node) {
    var copy = node.cloneNode(true);
    copy.querySelectorAll('input[name="csrfmiddlewaretoken"]').forEach(function (i) { i.removeAttribute("value"); });
    return copy;
  }

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var fragment = event.detail.fragment;
    if (!event.detail.shouldSwap || !target || !target.id || !target.querySelector) return;
    if (!target.querySelector("input, textarea, select")) return;
    var incoming = fragment && fragment.nodeType === 11 ? fragment.firstElementChild : fragment;
    if (incoming && incoming.nodeType === 1 && comparable(target).isEqualNode(comparable(incoming))) {
      event.detail.shouldSwap = false;
      return;
    }
    var kept = editedFields(target);
    if (kept.length) keptFields[target.id] = kept;
  });

  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var id = event.detail.target && event.detail.target.id;
    var kept = id ? keptFields[id] : null;
    var region = id ? document.getElementById(id) : null;
    if (!kept || !region) return;
    delete keptFields[id];
    region.querySelectorAll("input, textarea, select").forEach(function (field) {
      var was = kept.find(function (k) { return k.key === fieldKey(field) && (!k.box || k.value === field.value); });
      if (!was) return;
      if (was.box) field.checked = was.checked; else if (field.value === field.defaultValue) field.value = was.value;
      if (was.focused) field.focus();
    });
  });

  document.addEventListener("DOMContentLoaded", function () {
    applyLit();
    stateClicks();
    replayControls();
    document.addEventListener("keydown", replayKeys);
    document.addEventListener("change", replayChange);
    document.addEventListener("click", replayPlay);
  });
  // A boosted step link swapped the panes in: go on playing from it.
  document.addEventListener("htmx:afterSettle", function () {
    if (document.getElementById("replay-panes")) replayControls();
  });
  document.addEventListener("htmx:historyRestore", function () {
    keyTarget = null;
    if (document.getElementById("replay-panes")) replayControls();
  });
  document.addEventListener("htmx:oobAfterSwap", applyLit);
  document.addEventListener("htmx:wsAfterMessage", applyLit);
  // A reconnected page is whole again: the server sends every region on connect.
  document.addEventListener("htmx:wsOpen", function () { document.body.classList.remove("offline"); });
  document.addEventListener("htmx:wsClose", function () { document.body.classList.add("offline"); });
})();
