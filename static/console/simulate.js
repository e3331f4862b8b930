// The simulator's one behaviour beyond htmx: clicking an edge of the graph offers its event. The edge's group
// carries the Machine's event type (data-event); the offers with that event are opened and scrolled to, or the
// note under the graph says the event is not offered now.
(function () {
  "use strict";

  function note(text) {
    var el = document.getElementById("sim-edge-note");
    if (el) el.textContent = text;
  }

  function offerEdge(edge) {
    var event = edge.getAttribute("data-event");
    if (!event) return;
    var offers = Array.prototype.filter.call(document.querySelectorAll("#sim-events details.sim-offer"), function (d) {
      return d.getAttribute("data-event") === event;
    });
    document.querySelectorAll("#sim-events details.sim-offer.offered").forEach(function (d) {
      d.classList.remove("offered");
    });
    if (!offers.length) {
      note("The edge's event " + event + " is not offered now: no open party or timer sends it in this configuration.");
      return;
    }
    offers.forEach(function (d) { d.open = true; d.classList.add("offered"); });
    offers[0].scrollIntoView({ behavior: "smooth", block: "center" });
    var field = offers[0].querySelector("form.sim-send textarea, form.sim-send input:not([type=hidden]), form.sim-send button");
    if (field) field.focus({ preventScroll: true });
    note("Offered: " + event + (offers.length > 1 ? " (" + offers.length + " ways to send it)" : "") + ".");
  }

  document.addEventListener("DOMContentLoaded", function () {
    var graph = document.getElementById("graph");
    if (!graph || !document.getElementById("sim")) return;
    graph.addEventListener("click", function (event) {
      var edge = event.target.closest("g.edge[data-event]");
      if (edge) offerEdge(edge);
    });
  });
})();
