// Due times of Gates as live countdowns: every <time class="due" datetime="..."> in the page (the inbox, a run's
// Gates, a one-tap link's page) counts down each second to the moment the Machine's `after` fires. The moment comes
// from the server (the run's own timer); this only redraws the words, in the same form as the server's `due_text`.
(function () {
  "use strict";

  function words(left) {
    if (left <= 0) return "due now";
    var hours = Math.floor(left / 3600), minutes = Math.floor((left % 3600) / 60), seconds = left % 60;
    if (hours >= 24) return "due in " + Math.floor(hours / 24) + " d " + (hours % 24) + " h";
    if (hours) return "due in " + hours + " h " + minutes + " min";
    return "due in " + minutes + ":" + (seconds < 10 ? "0" : "") + seconds;
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("time.due[datetime]").forEach(function (node) {
      var at = Date.parse(node.getAttribute("datetime"));
      if (isNaN(at)) return;
      var left = Math.floor((at - now) / 1000);
      node.textContent = words(left);
      node.classList.toggle("soon", left > 0 && left < 600);
      node.classList.toggle("late", left <= 0);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    tick();
    window.setInterval(tick, 1000);
  });
})();
