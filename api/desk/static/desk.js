/* The desk's keyboard and focus handling (no build step; htmx does the requests).
   j/k move between posts, 1-5 confirm candidate n, x none of these, n not a claim, r reject all,
   u undo the last decision made on this page, / search for a manual match, m shows or folds the
   less likely candidates, Esc leaves a field.
   A key only clicks a button the page shows (not one folded away), so a key does exactly what
   the button does.
   The queue page has one manual-search panel, moved under the item it is opened for, and an
   item's note field is made when asked for: 50 items' worth of them would slow the page. */
(function () {
  "use strict";
  var last = null;      // id of the item decided last on this page (for u)
  // the item of each decision request running, by its request: a poll of the queue's freshness
  // (or any other request) may start or settle in between, and must neither clear nor take it
  var inFlight = new WeakMap();

  function items() { return Array.prototype.slice.call(document.querySelectorAll("article.item")); }

  function current() {
    var a = document.activeElement;
    var it = a && a.closest ? a.closest("article.item") : null;
    return it || document.querySelector("article.item.current") || items()[0] || null;
  }

  function focusItem(it) {
    if (!it) { return; }
    items().forEach(function (i) { i.classList.remove("current"); });
    it.classList.add("current");
    it.focus({preventScroll: true});
    it.scrollIntoView({block: "nearest"});
  }

  function move(step) {
    var all = items();
    if (!all.length) { return; }
    var i = all.indexOf(current());
    focusItem(all[Math.max(0, Math.min(all.length - 1, i < 0 ? 0 : i + step))]);
  }

  function nextPending(after) {
    var all = items(), i = all.indexOf(after);
    for (var j = i + 1; j < all.length; j++) {
      if (all[j].dataset.status === "pending") { return all[j]; }
    }
    return after;
  }

  function press(it, key) {
    if (!it) { return false; }
    var b = it.querySelector('button[data-key="' + key + '"]');
    if (b && !b.disabled && !b.closest("details:not([open])")) { b.click(); return true; }
    return false;
  }

  function toggleMore(it) {
    var more = it ? it.querySelector("details.more") : null;
    if (!more) { return false; }
    more.open = !more.open;
    return true;
  }

  function openManual(it) {
    var panel = document.getElementById("manual");
    if (!it || !panel || it.dataset.status !== "pending") { return false; }
    var f = panel.querySelector("form");
    f.elements.post_id.value = it.dataset.postId;
    f.elements.version.value = it.dataset.version;
    var h = it.querySelector("h2");
    panel.querySelector(".manual-for").textContent = h ? h.textContent : "this post";
    document.getElementById("manual-results").textContent = "";
    it.after(panel);
    panel.hidden = false;
    panel.dataset.item = it.id;
    f.elements.q.focus();
    return true;
  }

  function closeManual(refocus) {
    var panel = document.getElementById("manual");
    if (!panel || panel.hidden) { return; }
    panel.hidden = true;
    var it = document.getElementById(panel.dataset.item || "");
    if (refocus && it) { focusItem(it); }
  }

  function addNote(it) {
    var f = it && it.querySelector("form.decide");
    if (!f) { return false; }
    var box = f.querySelector("textarea[name=note]");
    if (!box) {
      var p = document.createElement("p"), label = document.createElement("label");
      box = document.createElement("textarea");
      p.className = "note-field";
      box.id = it.id + "-note";
      box.name = "note";
      box.rows = 2;
      box.maxLength = parseInt(document.body.dataset.noteMax || "2000", 10);
      label.htmlFor = box.id;
      label.textContent = "Note (kept with your decision)";
      p.appendChild(label);
      p.appendChild(box);
      f.insertBefore(p, f.querySelector(".actions"));
    }
    box.focus();
    return true;
  }

  function say(text) {
    var box = document.getElementById("messages");
    if (box) { box.textContent = text; }
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) {
      if (e.key === "Escape" && t.closest("#manual")) { closeManual(true); }
      else if (e.key === "Escape" && t.closest("article.item")) { focusItem(t.closest("article.item")); }
      return;
    }
    var it = current(), done = true;
    switch (e.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "1": case "2": case "3": case "4": case "5":
      case "x": case "n": case "r":
        done = press(it, e.key); break;
      case "u":
        done = press(last ? document.getElementById(last) : null, "u") || press(it, "u"); break;
      case "/": done = openManual(it); break;
      case "m": done = toggleMore(it); break;
      default: done = false;
    }
    if (done) { e.preventDefault(); }
  });

  document.addEventListener("htmx:beforeRequest", function (e) {
    var it = e.target.closest ? e.target.closest("article.item") : null;
    var panel = e.target.closest ? e.target.closest("#manual") : null;
    if (!it && panel) { it = document.getElementById(panel.dataset.item || ""); }
    if (it && e.detail.requestConfig.verb === "post" && e.detail.xhr) { inFlight.set(e.detail.xhr, it.id); }
  });

  document.addEventListener("htmx:afterSettle", function (e) {
    var xhr = e.detail.xhr, id = xhr ? inFlight.get(xhr) : null;
    if (!id) { return; }
    inFlight.delete(xhr);
    var it = document.getElementById(id);
    var status = xhr.status;
    if (!it) { return; }
    var heading = it.querySelector("h2");
    var label = it.querySelector(".badge.status");
    if (status === 200) { closeManual(false); }
    if (status === 200 && it.dataset.status !== "pending") {
      last = it.id;
      say("Recorded: " + (label ? label.textContent : it.dataset.status) + " for " + (heading ? heading.textContent : "the post") + ". Press u to undo.");
      focusItem(nextPending(it));
    } else {
      if (status === 200) { say("Undone: " + (heading ? heading.textContent : "the post") + " is pending again."); }
      focusItem(it);
    }
  });

  document.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a.manual-link, a.note-link, button.manual-close") : null;
    if (!a) { return; }
    var it = a.closest("article.item");
    var done = a.classList.contains("manual-close") ? (closeManual(true), true)
      : a.classList.contains("manual-link") ? openManual(it) : addNote(it);
    if (done) { e.preventDefault(); }
  });

  document.addEventListener("change", function (e) {
    if (e.target && e.target.id === "select-all") {
      document.querySelectorAll("article.item input.select").forEach(function (c) { c.checked = e.target.checked; });
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (!document.querySelector("main :focus") && document.querySelector("article.item")) {
      document.querySelector("article.item").classList.add("current");
    }
  });
})();
