// The timeline page: a click on a bar opens its details (and the address remembers which, so a live swap of the
// chart or a reload opens it again). Everything it reads comes from the server's HTML.
(function () {
  "use strict";

  function openDetail(id) {
    var detail = document.getElementById(id);
    if (!detail || detail.tagName !== "DETAILS") return;
    document.querySelectorAll(".tl-detail.picked").forEach(function (d) { d.classList.remove("picked"); });
    detail.open = true;
    detail.classList.add("picked");
    detail.scrollIntoView({ block: "nearest" });
  }

  function fromHash() {
    if (window.location.hash.length > 1) openDetail(decodeURIComponent(window.location.hash.slice(1)));
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a.tl-link");
    if (!link) return;
    event.preventDefault();
    var id = decodeURIComponent((link.getAttribute("href") || "").slice(1));
    window.history.replaceState(null, "", "#" + encodeURIComponent(id));
    openDetail(id);
  });
  document.addEventListener("DOMContentLoaded", fromHash);
  document.addEventListener("htmx:wsAfterMessage", fromHash);
})();
