/* kinetoscope interactive timeline, part 2: what the reader does with it (timeline.js
   draws). Hit testing and the hover tip (an event's details and arguments, its launch or
   kernel, a lane's name, a finding marker), zoom and pan (wheel, drag, W/A/S/D, double-click
   for all), finding selection from a card or a marker, and start-up: one Timeline per .tl
   element; timelines sharing a data-group open at one time scale, the longest one's full
   span, so equal widths mean equal times (an input.tl-scale of that data-group switches
   it; off by default where one run is more than SHARED_SCALE_RATIO times as long as
   another). At one scale they also move together: a zoom or pan of one shows the same
   time from each run's start in the others. */
(function () {
  "use strict";
  var K = window.kinetoscopeTimeline, Timeline = K.Timeline, fmtUs = K.fmtUs, fmtAt = K.fmtAt;
  var LABEL_W = K.LABEL_W, ROW_H = K.ROW_H, MARK_LEVELS = K.MARK_LEVELS, MARK_LEVEL_H = K.MARK_LEVEL_H;
  var MAX_ROWS = K.MAX_ROWS, MIN_SPAN_US = K.MIN_SPAN_US;
  // timelines of one group open at one time scale unless one spans this many times another
  var SHARED_SCALE_RATIO = 4;

  Timeline.prototype.hit = function (x, y) {
    if (x < LABEL_W) return -1;
    var t = this.t(x), tol = 2 * (this.v1 - this.v0) / (this.width - LABEL_W), best = -1;
    for (var r = 0; r < this.rowY.length; r++) {
      if (y < this.rowY[r] || y >= this.rowY[r] + ROW_H) continue;
      var end = this.rowFirst[r] + this.rowCount[r];
      for (var k = this.firstVisible(r, t - tol); k < end && this.start[k] <= t + tol; k++) {
        if (this.end[k] >= t - tol && (best < 0 || this.end[k] - this.start[k] < this.end[best] - this.start[best])) best = k;
      }
    }
    return best;
  };

  Timeline.prototype.markAt = function (x, y) {
    var lvl = Math.floor((y - this.marksTop) / MARK_LEVEL_H);
    if (lvl < 0 || lvl >= MARK_LEVELS || !this.placed) return null;
    return this.placed.filter(function (p) { return p.lvl === lvl && Math.abs(p.x - x) <= 5; })[0] || null;
  };

  /* the lane whose gutter row holds y, or null */
  Timeline.prototype.laneAt = function (y) {
    var found = null;
    this.lanesY.forEach(function (p) { if (y >= p[1] - 3) found = p[0]; });
    return found === null ? null : this.data.lanes[found];
  };

  Timeline.prototype.showTip = function (k, x, y, mark) {
    var tip = this.tip, d = this.data, html, lane = x < LABEL_W && y > this.marksTop + MARK_LEVELS * MARK_LEVEL_H ? this.laneAt(y) : null;
    if (lane) {
      html = "<b>" + esc(lane.label + (lane.of ? " of " + lane.of : "")) + "</b>" +
        (lane.kind === "device" ? "device stream" : (lane.of ? "Python frames" : "host thread") + ", call depth " + lane.rows) +
        (lane.rows > MAX_ROWS ? " (from depth " + MAX_ROWS + " on, drawn in the last row)" : "");
    } else if (mark) {
      var el = this.findingEls.filter(function (e) { return +e.dataset.finding === mark.m.f; })[0];
      html = "<b>" + esc(el ? el.dataset.title : "finding") + "</b>" + (mark.more ? "and " + mark.more + " more markers here" : "click to select");
    } else if (k >= 0) {
      var lab = d.labels[this.label[k]], lane = d.lanes[d.rows[this.rowOf[k]][0]];
      var rows = [["start", fmtAt(this.start[k])], ["duration", fmtUs(this.end[k] - this.start[k])], ["kind", d.groups[lab[1]]], ["lane", lane.of ? lane.label + " of " + lane.of : lane.label]];
      var args = this.args[k] || {};
      Object.keys(args).forEach(function (a) {  // strings (input shapes) as they read, the rest as JSON
        rows.push([a, typeof args[a] === "string" ? args[a] : JSON.stringify(args[a])]);
      });
      if (this.link[k] >= 0) rows.push([lane.kind === "device" ? "launched by" : "launches", d.labels[this.label[this.link[k]]][0]]);
      html = "<b>" + esc(lab[0]) + "</b><table>" + rows.map(function (r) { return "<tr><td>" + esc(r[0]) + "</td><td>" + esc(r[1]) + "</td></tr>"; }).join("") + "</table>";
    } else { tip.style.display = "none"; return; }
    tip.innerHTML = html; tip.style.display = "block";
    var left = Math.min(x + 14, this.width - 360);
    tip.style.left = Math.max(left, 0) + "px"; tip.style.top = (y + 36) + "px";
  };

  function esc(s) { return String(s).replace(/[&<>"]/g, function (ch) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch]; }); }

  Timeline.prototype.zoom = function (factor, atX) {
    var t = this.t(atX === undefined ? (LABEL_W + this.width) / 2 : atX);
    var span = Math.max((this.v1 - this.v0) * factor, MIN_SPAN_US), full = this.full * 1.1;
    span = Math.min(span, full);
    var frac = (t - this.v0) / (this.v1 - this.v0);
    this.setView(t - frac * span, t - frac * span + span);
  };

  /* the whole trace, or the group's common span from this trace's first event */
  Timeline.prototype.home = function () { this.setView(this.t0, this.t0 + this.full); };

  Timeline.prototype.setFull = function (span) {
    this.full = Math.max(span, this.t1 - this.t0); this.home();
  };

  Timeline.prototype.pan = function (dt) { this.setView(this.v0 + dt, this.v1 + dt); };

  /* `alone`: a peer's move, not passed on again */
  Timeline.prototype.setView = function (v0, v1, alone) {
    var span = v1 - v0, pad = this.full * 0.05, last = this.t0 + this.full, self = this;
    if (v0 < this.t0 - pad) { v0 = this.t0 - pad; v1 = v0 + span; }
    if (v1 > last + pad) { v1 = last + pad; v0 = v1 - span; }
    this.v0 = v0; this.v1 = v1; this.request();
    if (alone || !this.peers) return;
    this.peers.forEach(function (p) {
      if (p !== self) p.setView(p.t0 + (v0 - self.t0), p.t0 + (v1 - self.t0), true);
    });
  };

  Timeline.prototype.selectFinding = function (fi) {
    this.finding = fi;
    this.tip.style.display = "none";  // the view moves: what the tip named is elsewhere now
    this.findingEls.forEach(function (e) { e.classList.toggle("selected", +e.dataset.finding === fi); });
    var f = this.data.findings[fi], self = this, lo = Infinity, hi = -Infinity;
    if (!f) return;
    f.events.forEach(function (k) { lo = Math.min(lo, self.start[k]); hi = Math.max(hi, self.end[k]); });
    f.spans.forEach(function (s) { lo = Math.min(lo, s[0]); hi = Math.max(hi, s[0] + s[1]); });
    if (isFinite(lo)) {
      var pad = Math.max((hi - lo) * 0.15, 5);
      this.setView(lo - pad, hi + pad);
      this.root.scrollIntoView({ block: "nearest", behavior: "smooth" });
    }
    this.request();
  };

  Timeline.prototype.bind = function () {
    var self = this, cv = this.canvas, drag = null;
    cv.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = cv.getBoundingClientRect();
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) self.pan((e.deltaX || e.deltaY) / (self.width - LABEL_W) * (self.v1 - self.v0));
      else self.zoom(Math.exp(e.deltaY * 0.002), e.clientX - r.left);
    }, { passive: false });
    cv.addEventListener("mousedown", function (e) { drag = { x: e.clientX, v0: self.v0, v1: self.v1, moved: false }; });
    window.addEventListener("mouseup", function () { setTimeout(function () { drag = null; }, 0); });
    cv.addEventListener("mousemove", function (e) {
      var r = cv.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
      self.hoverX = x;
      if (drag && (e.buttons & 1)) {
        var dx = e.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        var dt = dx / (self.width - LABEL_W) * (drag.v1 - drag.v0);
        self.setView(drag.v0 - dt, drag.v1 - dt);
        self.tip.style.display = "none";
        return;
      }
      var mark = self.markAt(x, y), k = mark ? -1 : self.hit(x, y);
      if (k !== self.hover) { self.hover = k; self.request(); }
      self.showTip(k, x, y, mark);
      cv.style.cursor = mark || k >= 0 ? "pointer" : "grab";
    });
    cv.addEventListener("mouseleave", function () { self.hover = -1; self.tip.style.display = "none"; self.request(); });
    cv.addEventListener("click", function (e) {
      if (drag && drag.moved) return;
      var r = cv.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
      var mark = self.markAt(x, y);
      if (mark) {
        var el = self.findingEls.filter(function (f) { return +f.dataset.finding === mark.m.f; })[0];
        self.selectFinding(mark.m.f);
        if (el) {  // a diff page folds each run's findings away: unfold the way to this one
          for (var box = el.closest("details"); box; box = box.parentElement.closest("details")) box.open = true;
          el.scrollIntoView({ block: "nearest" });
        }
        return;
      }
      self.pinned = self.hit(x, y); self.request();
    });
    cv.addEventListener("dblclick", function () { self.home(); });
    cv.addEventListener("mouseenter", function () { cv.focus({ preventScroll: true }); });
    cv.addEventListener("keydown", function (e) {
      var key = e.key.toLowerCase(), span = self.v1 - self.v0;
      if (key === "w") self.zoom(0.8, self.hoverX);
      else if (key === "s") self.zoom(1.25, self.hoverX);
      else if (key === "a") self.pan(-span * 0.1);
      else if (key === "d") self.pan(span * 0.1);
      else if (key === "0" || key === "escape") { self.finding = -1; self.pinned = -1; self.home(); }
      else return;
      e.preventDefault();
    });
    var reset = this.root.querySelector(".tl-reset");
    if (reset) reset.addEventListener("click", function () { self.finding = -1; self.pinned = -1; self.selectFinding(-1); self.home(); });
    this.findingEls.forEach(function (el) {
      el.addEventListener("click", function (e) {
        if (e.target.closest("a")) return;
        self.selectFinding(+el.dataset.finding);
      });
    });
    window.addEventListener("resize", function () { self.resize(); });
    if (window.matchMedia) {
      var mq = window.matchMedia("(prefers-color-scheme: dark)");
      var again = function () { self.readColors(); self.request(); };
      if (mq.addEventListener) mq.addEventListener("change", again);
    }
  };

  function init() {
    var groups = {};
    document.querySelectorAll(".ks .tl[data-timeline]").forEach(function (root) {
      if (root.ksTimeline) return;
      try { root.ksTimeline = new Timeline(root); }
      catch (err) { root.querySelector(".tl-range").textContent = "timeline unavailable: " + err; throw err; }
      if (root.dataset.group) (groups[root.dataset.group] = groups[root.dataset.group] || []).push(root.ksTimeline);
    });
    Object.keys(groups).forEach(function (g) {
      var spans = groups[g].map(function (tl) { return tl.t1 - tl.t0; });
      var longest = Math.max.apply(null, spans), shortest = Math.min.apply(null, spans);
      var box = document.querySelector(".ks input.tl-scale[data-group='" + g + "']");
      var apply = function (shared) {
        groups[g].forEach(function (tl) { tl.peers = shared ? groups[g] : null; tl.setFull(shared ? longest : 0); });
      };
      // one scale reads at a glance while the runs are of a size; past SHARED_SCALE_RATIO
      // the shorter one would be a sliver, so each opens on its own span (the box says so)
      var shared = longest <= SHARED_SCALE_RATIO * shortest;
      if (box) {
        box.checked = shared;
        box.addEventListener("change", function () { apply(box.checked); });
      }
      apply(shared);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
