// Reading a big Machine's graph (templates/console/graph/_panel.html, pages/folds.py): a "−" on every compound
// state collapses it into one box and a "+" on a collapsed one expands it (the server draws the graph again with
// graphviz and remembers the choice for this user and workflow); "whole Machine" fits the drawing in the panel,
// "actual size" shows it at its size with an overview (a minimap with the visible part framed: click or drag it to
// move there); a click on a child Machine's row ("Machine <id>") opens that Machine's own graph.
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function pathOf(g) {
    return g.id.slice("state-".length);
  }

  // The "−" / "+" on each compound or collapsed state, in the top right corner of its frame.
  function addToggles(svg) {
    svg.querySelectorAll("g.cluster.state:not(.state-root), g.node.state-collapsed").forEach(function (g) {
      var box = g.getBBox();
      var collapsed = g.classList.contains("state-collapsed");
      var toggle = document.createElementNS(SVGNS, "g");
      toggle.setAttribute("class", "fold-toggle");
      toggle.setAttribute("role", "button");
      toggle.setAttribute("tabindex", "0");
      toggle.setAttribute("data-path", pathOf(g));
      toggle.setAttribute("aria-label", (collapsed ? "expand " : "collapse ") + pathOf(g));
      var x = box.x + box.width - 15, y = box.y + 3;
      var rect = document.createElementNS(SVGNS, "rect");
      rect.setAttribute("x", x); rect.setAttribute("y", y); rect.setAttribute("width", 12);
      rect.setAttribute("height", 12); rect.setAttribute("rx", 2);
      var sign = document.createElementNS(SVGNS, "text");
      sign.setAttribute("x", x + 6); sign.setAttribute("y", y + 10); sign.setAttribute("text-anchor", "middle");
      sign.textContent = collapsed ? "+" : "\u2212";
      var title = document.createElementNS(SVGNS, "title");
      title.textContent = (collapsed ? "expand " : "collapse ") + pathOf(g);
      toggle.appendChild(title); toggle.appendChild(rect); toggle.appendChild(sign);
      g.appendChild(toggle);
    });
  }

  // Each "Machine <id>" row of a state that invokes child Machines links to the child's graph.
  function markChildren(svg) {
    svg.querySelectorAll("g[data-machines]").forEach(function (g) {
      var ids = g.getAttribute("data-machines").split(" ");
      var rows = Array.prototype.filter.call(g.querySelectorAll("text"), function (t) {
        return /^Machine /.test(t.textContent);
      });
      rows.forEach(function (row, i) {
        if (!ids[i]) return;
        row.classList.add("child-machine");
        row.setAttribute("data-child", ids[i]);
        row.setAttribute("role", "link");
      });
    });
  }

  // "(2 of 9 collapsed)": counted again from the boxes after each "−" / "+", so it never goes stale.
  function countFolds() {
    var count = document.getElementById("fold-count");
    var boxes = document.querySelectorAll('#graph-folds input[name="collapsed"]');
    if (!count || !boxes.length) return;
    var checked = Array.prototype.filter.call(boxes, function (b) { return b.checked; }).length;
    count.textContent = "(" + checked + " of " + boxes.length + " collapsed)";
  }

  function toggleFold(graph, path) {
    var body = new URLSearchParams({ toggle: path, machine: graph.dataset.machine || "",
                                     run: graph.dataset.run || "" });
    graph.classList.add("busy");
    fetch(graph.dataset.foldsUrl, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), "X-Jr2-Graph": "1" },
    }).then(function (response) {
      return response.text().then(function (text) {
        if (!response.ok) throw new Error(text);
        return text;
      });
    }).then(function (svg) {
      graph.innerHTML = svg;
      var box = document.querySelector('#graph-folds input[value="' + CSS.escape(path) + '"]');
      if (box) box.checked = !box.checked;
      countFolds();
      decorate(graph);
      document.dispatchEvent(new CustomEvent("jr2:graphdrawn"));
    }).catch(function (error) {
      graph.setAttribute("title", String(error.message || error));
    }).finally(function () {
      graph.classList.remove("busy");
    });
  }

  // -- zoom and the overview ------------------------------------------------------------------------------------

  function naturalWidth(svg) {
    var width = svg.getAttribute("width") || "";
    var value = parseFloat(width);
    return /pt$/.test(width) ? value * 4 / 3 : value;
  }

  function setZoom(graph, mode) {
    graph.classList.toggle("actual", mode === "actual");
    document.querySelectorAll("[data-graph-zoom]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.graphZoom === mode));
    });
    refreshMinimap(graph);
  }

  function refreshMinimap(graph) {
    var map = document.getElementById("graph-minimap");
    var svg = graph.querySelector("svg");
    if (!map || !svg) return;
    var needed = graph.classList.contains("actual") &&
      (graph.scrollWidth > graph.clientWidth + 4 || graph.scrollHeight > graph.clientHeight + 4);
    map.hidden = !needed;
    if (!needed) return;
    var copy = svg.cloneNode(true);
    copy.querySelectorAll("[id]").forEach(function (e) { e.removeAttribute("id"); });
    copy.querySelectorAll(".fold-toggle").forEach(function (e) { e.remove(); });
    copy.removeAttribute("width");
    copy.removeAttribute("height");
    copy.setAttribute("aria-hidden", "true");
    map.textContent = "";
    map.appendChild(copy);
    // At least 90 px high for a wide drawing (a 300-state Machine can be seven times wider than high).
    var aspect = graph.scrollWidth / Math.max(graph.scrollHeight, 1);
    var room = graph.parentNode.clientWidth - 24;
    map.style.width = Math.max(Math.min(room, Math.max(240, 90 * aspect)), 120) + "px";
    var frame = document.createElement("div");
    frame.className = "minimap-view";
    map.appendChild(frame);
    placeFrame(graph);
  }

  function placeFrame(graph) {
    var map = document.getElementById("graph-minimap");
    var frame = map && map.querySelector(".minimap-view");
    if (!frame || map.hidden) return;
    var scale = map.clientWidth / graph.scrollWidth;
    frame.style.left = graph.scrollLeft * scale + "px";
    frame.style.top = graph.scrollTop * scale + "px";
    frame.style.width = graph.clientWidth * scale + "px";
    frame.style.height = graph.clientHeight * scale + "px";
  }

  function moveTo(graph, event) {
    var map = document.getElementById("graph-minimap");
    var rect = map.getBoundingClientRect();
    var scale = map.clientWidth / graph.scrollWidth;
    graph.scrollLeft = (event.clientX - rect.left) / scale - graph.clientWidth / 2;
    graph.scrollTop = (event.clientY - rect.top) / scale - graph.clientHeight / 2;
  }

  function decorate(graph) {
    var svg = graph.querySelector("svg");
    if (!svg) return;
    addToggles(svg);
    markChildren(svg);
    refreshMinimap(graph);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var graph = document.getElementById("graph");
    if (!graph || !graph.dataset.foldsUrl) return;
    // Capture: a toggle or a child's row must not also open the state's details (console.js listens on #graph).
    graph.addEventListener("click", function (event) {
      var toggle = event.target.closest(".fold-toggle");
      if (toggle) {
        event.stopImmediatePropagation();
        toggleFold(graph, toggle.getAttribute("data-path"));
        return;
      }
      var child = event.target.closest(".child-machine");
      if (child) {
        event.stopImmediatePropagation();
        window.location.assign(graph.dataset.machineBase + child.getAttribute("data-child") + "/");
      }
    }, true);
    graph.addEventListener("keydown", function (event) {
      var toggle = event.target.closest && event.target.closest(".fold-toggle");
      if (toggle && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        toggleFold(graph, toggle.getAttribute("data-path"));
      }
    });
    graph.addEventListener("scroll", function () { placeFrame(graph); });
    window.addEventListener("resize", function () { refreshMinimap(graph); });
    var map = document.getElementById("graph-minimap");
    if (map) {
      var dragging = false;
      map.addEventListener("pointerdown", function (event) { dragging = true; moveTo(graph, event); });
      map.addEventListener("pointermove", function (event) { if (dragging) moveTo(graph, event); });
      window.addEventListener("pointerup", function () { dragging = false; });
    }
    document.querySelectorAll("[data-graph-zoom]").forEach(function (button) {
      button.addEventListener("click", function () { setZoom(graph, button.dataset.graphZoom); });
    });
    decorate(graph);
    var svg = graph.querySelector("svg");
    // A drawing much wider than the panel is unreadable when fitted: show it at its size, with the overview.
    setZoom(graph, svg && naturalWidth(svg) > 1.6 * graph.clientWidth ? "actual" : "fit");
    var pending = null;
    document.addEventListener("htmx:wsAfterMessage", function () {
      if (pending !== null) return;
      pending = window.setTimeout(function () { pending = null; refreshMinimap(graph); }, 500);
    });
  });
})();
