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

  function replayControls() {
    var slider = document.getElementById("step-slider");
    if (!slider) return;
    var url = new URL(window.location.href);
    slider.addEventListener("change", function () {
      url.searchParams.set("step", slider.value);
      url.searchParams.delete("play");
      window.location.assign(url.toString());
    });
    var play = document.getElementById("play");
    var speed = document.getElementById("play-speed");
    var playing = url.searchParams.get("play");
    if (playing) {
      speed.value = playing;
      play.textContent = "\u23F8 pause";
      var step = parseInt(slider.value, 10);
      if (step < parseInt(slider.max, 10)) {
        window.setTimeout(function () {
          url.searchParams.set("step", String(step + 1));
          window.location.assign(url.toString());
        }, 1000 / parseFloat(playing));
      }
    }
    play.addEventListener("click", function () {
      if (url.searchParams.get("play")) {
        url.searchParams.delete("play");
      } else {
        url.searchParams.set("play", speed.value);
        if (parseInt(slider.value, 10) >= parseInt(slider.max, 10)) url.searchParams.set("step", "1");
      }
      window.location.assign(url.toString());
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    applyLit();
    stateClicks();
    replayControls();
  });
  document.addEventListener("htmx:oobAfterSwap", applyLit);
  document.addEventListener("htmx:wsAfterMessage", applyLit);
  // A reconnected page is whole again: the server sends every region on connect.
  document.addEventListener("htmx:wsOpen", function () { document.body.classList.remove("offline"); });
  document.addEventListener("htmx:wsClose", function () { document.body.classList.add("offline"); });
})();
