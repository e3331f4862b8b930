// The run page's history feeds (steps and Turns, newest first; console/pages/feeds.py): each list holds only what the
// user scrolled through, older pages come from the loaders htmx fires when they scroll into view. After each commit
// the live socket pushes the newest page again ("the head"); here it is merged into the list by item id and cursor:
// new items go in their place, changed ones are replaced, and when the page missed some items in between (it was
// offline, or many steps came at once) a loader for exactly those is put in the gap. Also: the deep link's step is
// marked and scrolled to, and every "copy link" button copies its step's address.
(function () {
  "use strict";

  function cursorOf(el) {
    return el && el.dataset && el.dataset.cursor ? parseInt(el.dataset.cursor, 10) : null;
  }

  function nextItem(el) {
    for (var n = el.nextElementSibling; n; n = n.nextElementSibling) {
      if (cursorOf(n) !== null) return n;
    }
    return null;
  }

  function loader(list, before, after) {
    var tag = list.tagName === "OL" || list.tagName === "UL" ? "li" : "div";
    var el = document.createElement(tag);
    el.className = "feed-more";
    var url = list.dataset.more + "?before=" + before + (after ? "&after=" + after : "");
    el.setAttribute("hx-get", url);
    el.setAttribute("hx-trigger", "intersect once, click");
    el.setAttribute("hx-swap", "outerHTML");
    el.textContent = list.dataset.moreLabel || "older…";
    return el;
  }

  // An item the list does not have, before the first older one (after the last item when it is the oldest).
  function place(list, item) {
    var c = cursorOf(item);
    var lastItem = null;
    for (var n = list.firstElementChild; n; n = n.nextElementSibling) {
      var nc = cursorOf(n);
      if (nc === null) continue;
      if (nc < c) { list.insertBefore(item, n); return; }
      lastItem = n;
    }
    list.insertBefore(item, lastItem ? lastItem.nextElementSibling : list.firstElementChild);
  }

  // The head, newest first, into the list: returns false so htmx does not swap it in itself.
  function merge(list, head) {
    var fresh = Array.prototype.filter.call(head.children, function (el) { return cursorOf(el) !== null; });
    var oldest = null;
    fresh.forEach(function (item) {
      var old = document.getElementById(item.id);
      if (old && old.parentNode === list) {
        if (old.outerHTML !== item.outerHTML) {
          if (old.classList.contains("target")) item.classList.add("target");
          list.replaceChild(item, old);
          htmx.process(item);
        } else {
          item = old;
        }
      } else {
        place(list, item);
        htmx.process(item);
      }
      if (oldest === null || cursorOf(item) < cursorOf(oldest)) oldest = item;
    });
    if (oldest !== null) {
      var prev = parseInt(head.dataset.prev || "0", 10);
      var below = nextItem(oldest);
      var gap = null;
      if (below !== null && cursorOf(below) < prev) gap = loader(list, cursorOf(oldest), cursorOf(below));
      else if (below === null && prev > 0 && !(oldest.nextElementSibling &&
                                                 oldest.nextElementSibling.classList.contains("feed-more"))) {
        gap = loader(list, cursorOf(oldest), 0);
      }
      if (gap !== null) {
        list.insertBefore(gap, oldest.nextElementSibling);
        htmx.process(gap);
      }
      var empty = list.parentNode.querySelector(".feed-empty");
      if (empty) empty.remove();
    }
  }

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || !target.classList || !target.classList.contains("feed")) return;
    event.detail.shouldSwap = false;
    merge(target, event.detail.fragment);
  });

  function markTarget() {
    var section = document.getElementById("run-steps");
    if (!section || !section.dataset.step) return;
    var step = document.getElementById("step-" + section.dataset.step);
    if (!step) return;
    step.classList.add("target");
    step.setAttribute("aria-current", "step");
    step.scrollIntoView({ block: "center" });
  }

  function copied(button, text) {
    var was = button.dataset.label || button.textContent;
    button.dataset.label = was;
    button.textContent = text;
    window.setTimeout(function () { button.textContent = was; }, 1500);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest(".copy-link") : null;
    if (!button) return;
    var link = new URL(button.dataset.link, window.location.href).href;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(link).then(function () { copied(button, "copied"); },
                                               function () { copied(button, "could not copy"); });
    } else {
      copied(button, link);
    }
  });

  document.addEventListener("DOMContentLoaded", markTarget);
})();
