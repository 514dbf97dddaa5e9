/* kinetoscope interactive timeline, part 1: the data and the picture (timeline_input.js
   is part 2: what the reader does with it). Canvas lanes for host threads and device
   streams. Data: the JSON payload of pipeline/timeline_data.py in a
   <script type="application/json"> inside each .tl element. Level of detail: per row,
   events are visited in start order and events that add no new pixel column are skipped
   with a binary search over the row's running max end, so a frame visits and draws about
   one event per pixel column per row however many events are visible. Every loop over
   events moves its index forward on each turn and stops at the row's (or the data's)
   end, whatever the payload holds: a page that hangs is worse than one that draws less.
   A page may hold several timelines (diff: one per run); each finds its own finding
   cards (.finding[data-for] equal to its data-timeline). */
(function () {
  "use strict";
  var LABEL_W = 150, AXIS_H = 20, STEP_H = 14, MARK_LEVEL_H = 10, MARK_LEVELS = 4;
  var ROW_H = 11, LANE_GAP = 6, MAX_ROWS = 16, MIN_SPAN_US = 0.05, MAX_TICKS = 16;
  var SEV_RANK = { critical: 0, warn: 1, info: 2 };

  // 3 significant digits in the unit that keeps them readable, trailing zeros kept:
  // the same text as kinetoscope.units.fmt_us (`393 us`, `1.20 ms`, `23.1 us`).
  function fmtUs(us) {
    if (!isFinite(us)) return "-";
    if (us === 0) return "0 us";
    var scales = [[1, " us"], [1e3, " ms"], [1e6, " s"]];
    for (var i = 0; i < scales.length; i++) {
      var x = Number((us / scales[i][0]).toPrecision(3));
      if (Math.abs(x) < 1000 || i === scales.length - 1) {
        var a = Math.abs(x);
        var decimals = a >= 100 ? 0 : 2 - Math.floor(Math.log10(a));
        return x.toFixed(Math.max(decimals, 0)) + scales[i][1];
      }
    }
  }

  /* a time from the trace start, signed as Perfetto shows it: `+1.20 ms`, `-53.2 ms` */
  function fmtAt(us) { return (us < 0 ? "-" : "+") + fmtUs(Math.abs(us)); }

  function Timeline(root) {
    var data = JSON.parse(root.querySelector("script[type='application/json']").textContent);
    this.root = root;
    this.data = data;
    this.canvas = root.querySelector("canvas");
    this.tip = root.querySelector(".tl-tip");
    this.decode(data);
    this.layout();
    this.full = this.t1 - this.t0;
    this.v0 = this.t0; this.v1 = this.t1;
    this.hover = -1; this.pinned = -1; this.finding = -1;
    this.frames = [];
    this.readColors();
    this.legend();
    this.bind();
    this.resize();
  }

  Timeline.prototype.decode = function (d) {
    var q = d.quantum_us, n = d.dur.length;
    this.n = n;
    this.start = new Float64Array(n); this.end = new Float64Array(n);
    this.label = Int32Array.from(d.label);
    this.rowOf = new Int32Array(n);
    this.rowFirst = []; this.rowCount = []; this.maxEnd = new Float64Array(n);
    var k = 0, t0 = Infinity, t1 = -Infinity;
    for (var r = 0; r < d.rows.length; r++) {
      var count = d.rows[r][2], acc = 0, run = -Infinity;
      this.rowFirst.push(k); this.rowCount.push(count);
      for (var j = 0; j < count && k < n; j++, k++) {
        acc += d.start[k];
        this.start[k] = acc * q; this.end[k] = (acc + d.dur[k]) * q;
        this.rowOf[k] = r;
        if (this.end[k] > run) run = this.end[k];
        this.maxEnd[k] = run;
        if (this.start[k] < t0) t0 = this.start[k];
        if (this.end[k] > t1) t1 = this.end[k];
      }
    }
    d.steps.forEach(function (s) { t0 = Math.min(t0, s[1]); t1 = Math.max(t1, s[2]); });
    if (!isFinite(t0)) { t0 = 0; t1 = 1; }
    this.t0 = t0; this.t1 = Math.max(t1, t0 + MIN_SPAN_US);
    this.link = new Int32Array(n).fill(-1);
    for (var i = 0; i + 1 < d.links.length; i += 2) {
      this.link[d.links[i]] = d.links[i + 1]; this.link[d.links[i + 1]] = d.links[i];
    }
    this.args = {};
    var ev = 0;
    for (var a = 0; a < d.args.events.length; a++) {
      ev += d.args.events[a]; this.args[ev] = d.args.table[d.args.entry[a]];
    }
    this.marks = [];
    var self = this, key = this.root.dataset.timeline || "";
    this.findingEls = Array.prototype.slice.call(
      (root_of(this.root)).querySelectorAll(".finding[data-finding]"))
      .filter(function (e) { return (e.dataset.for || "") === key; });
    d.findings.forEach(function (f, fi) {
      var el = self.findingEls.filter(function (e) { return +e.dataset.finding === fi; })[0];
      var sev = el ? el.dataset.severity : "info";
      f.events.forEach(function (e) { self.marks.push({ f: fi, t: self.start[e], sev: sev }); });
      f.spans.forEach(function (s) { self.marks.push({ f: fi, t: s[0], sev: sev }); });
    });
    this.marks.sort(function (a, b) { return a.t - b.t || SEV_RANK[a.sev] - SEV_RANK[b.sev]; });
  };

  /* `text` cut to `width` pixels with an ellipsis (the whole name is in the gutter's tip) */
  function fitText(ctx, text, width) {
    if (ctx.measureText(text).width <= width) return text;
    var lo = 0, hi = text.length;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(text.slice(0, mid) + "\u2026").width <= width) lo = mid; else hi = mid - 1;
    }
    return text.slice(0, lo) + "\u2026";
  }

  function root_of(el) { return el.closest(".ks") || document; }

  Timeline.prototype.layout = function () {
    var d = this.data, y = AXIS_H + STEP_H + MARK_LEVELS * MARK_LEVEL_H + 4;
    this.marksTop = AXIS_H + STEP_H;
    this.rowY = []; this.lanesY = [];
    var lastLane = -1;
    for (var r = 0; r < d.rows.length; r++) {
      var lane = d.rows[r][0], depth = d.rows[r][1];
      if (lane !== lastLane) { if (lastLane >= 0) y += LANE_GAP; this.lanesY.push([lane, y]); lastLane = lane; }
      if (depth < MAX_ROWS) { this.rowY.push(y); y += ROW_H; }
      else this.rowY.push(y - ROW_H);  // deeper frames share the last row
    }
    this.height = y + 4;
  };

  Timeline.prototype.readColors = function () {
    var css = getComputedStyle(this.root), c = {};
    ["fg", "on-bar", "muted", "bg", "panel", "line", "accent", "band-a", "band-b", "warn", "critical", "info"]
      .concat(this.data.groups).forEach(function (k) { c[k] = css.getPropertyValue("--" + k).trim() || "#888"; });
    this.colors = c;
    this.groupColor = this.data.groups.map(function (g) { return c[g]; });
  };

  Timeline.prototype.legend = function () {
    var used = {}, self = this;
    this.data.labels.forEach(function (l) { used[l[1]] = true; });
    var box = this.root.querySelector(".legend");
    if (!box) return;
    box.innerHTML = "";
    this.data.groups.forEach(function (g, i) {
      if (!used[i]) return;
      var s = document.createElement("span");
      s.innerHTML = "<i style='background:var(--" + g + ")'></i>" + g;
      box.appendChild(s);
    });
    [["critical", "critical"], ["warn", "warn"], ["info", "info"]].forEach(function (p) {
      if (!self.marks.some(function (m) { return m.sev === p[0]; })) return;
      var s = document.createElement("span");
      s.innerHTML = "<i style='background:var(--" + p[0] + ")'></i>" + p[1] + " finding";
      box.appendChild(s);
    });
  };

  Timeline.prototype.resize = function () {
    var dpr = window.devicePixelRatio || 1, w = this.canvas.clientWidth || 900;
    this.width = w; this.dpr = dpr;
    this.canvas.width = Math.round(w * dpr); this.canvas.height = Math.round(this.height * dpr);
    this.canvas.style.height = this.height + "px";
    this.draw();
  };

  Timeline.prototype.x = function (t) { return LABEL_W + (t - this.v0) / (this.v1 - this.v0) * (this.width - LABEL_W); };
  Timeline.prototype.t = function (x) { return this.v0 + (x - LABEL_W) / (this.width - LABEL_W) * (this.v1 - this.v0); };

  Timeline.prototype.request = function () {
    var self = this;
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(function () { self.pending = false; self.draw(); });
  };

  /* first event of row r whose running max end reaches t (maxEnd is non-decreasing) */
  Timeline.prototype.firstVisible = function (r, t) {
    var lo = this.rowFirst[r], hi = lo + this.rowCount[r];
    while (lo < hi) { var mid = (lo + hi) >> 1; if (this.maxEnd[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  };

  /* first index in [lo, hi) whose running max end passes t */
  Timeline.prototype.firstEndingAfter = function (lo, hi, t) {
    while (lo < hi) { var mid = (lo + hi) >> 1; if (this.maxEnd[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  };

  Timeline.prototype.draw = function () {
    var began = performance.now();
    var ctx = this.canvas.getContext("2d"), c = this.colors, d = this.data, self = this;
    var W = this.width, H = this.height;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = c.bg; ctx.fillRect(0, 0, W, H);
    ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
    // steps: bands behind everything, labels in their own strip
    ctx.save(); ctx.beginPath(); ctx.rect(LABEL_W, 0, W - LABEL_W, H); ctx.clip();
    d.steps.forEach(function (s, i) {
      var x0 = self.x(s[1]), x1 = self.x(s[2]);
      if (x1 < LABEL_W || x0 > W) return;
      ctx.fillStyle = i % 2 ? c["band-b"] : c["band-a"];
      ctx.fillRect(x0, AXIS_H, Math.max(x1 - x0, 1), H - AXIS_H);
      if (x1 - x0 > 30) { ctx.fillStyle = c.muted; ctx.fillText(/^#/.test(s[0]) ? "step " + s[0] : s[0], Math.max(x0, LABEL_W) + 3, AXIS_H + STEP_H / 2); }
    });
    // events, one pass per row with pixel-column skipping
    var drawn = 0, scale = (W - LABEL_W) / (this.v1 - this.v0);
    var runColor = null, runX0 = 0, runX1 = 0, y = 0;
    function flush() {
      if (runColor === null) return;
      ctx.fillStyle = runColor; ctx.fillRect(runX0, y, runX1 - runX0, ROW_H - 1); runColor = null;
    }
    for (var r = 0; r < d.rows.length; r++) {
      var end = this.rowFirst[r] + this.rowCount[r], lastPx = -1;
      // past MAX_ROWS a lane's deeper rows share its last row: names there would overprint
      var named = d.rows[r][1] < MAX_ROWS - 1 || d.lanes[d.rows[r][0]].rows <= MAX_ROWS;
      y = this.rowY[r];
      for (var k = this.firstVisible(r, this.v0); k < end; k++) {
        var s = this.start[k];
        if (s > this.v1) break;
        var x0 = LABEL_W + (s - this.v0) * scale, x1 = LABEL_W + (this.end[k] - this.v0) * scale;
        if (x1 <= lastPx) {  // adds no pixel column: jump to the first event that does
          // searched from k + 1, so the loop always advances: from k itself, an end that
          // rounds onto lastPx in pixels but not in time found k again, forever
          k = this.firstEndingAfter(k + 1, end, this.v0 + (lastPx - LABEL_W) / scale) - 1;
          continue;
        }
        if (x0 < lastPx) x0 = lastPx;
        var w = Math.max(x1 - x0, 1), color = this.groupColor[d.labels[this.label[k]][1]];
        // adjacent slivers of one colour become one rectangle
        if (color === runColor && x0 <= runX1 + 0.5) runX1 = x0 + w;
        else { flush(); runColor = color; runX0 = x0; runX1 = x0 + w; }
        drawn++;
        lastPx = x0 + w;
        if (w > 50 && named) {
          flush();
          ctx.fillStyle = c["on-bar"];
          var name = d.labels[this.label[k]][0], fit = Math.floor((w - 4) / 6);
          ctx.fillText(name.length > fit ? name.slice(0, Math.max(fit - 1, 0)) + "\u2026" : name, Math.max(x0, LABEL_W) + 2, y + ROW_H / 2);
        }
      }
      flush();
    }
    this.drawHighlights(ctx);
    this.drawMarks(ctx);
    ctx.restore();
    // gutter: lane names, axis
    ctx.fillStyle = c.bg; ctx.fillRect(0, 0, LABEL_W, H);
    ctx.fillStyle = c.fg;
    this.lanesY.forEach(function (p) {
      var lane = d.lanes[p[0]];
      var mark = lane.kind === "device" ? "\u25A0 " : lane.of ? "  \u21B3 " : "\u25A1 ";
      ctx.fillText(fitText(ctx, mark + lane.label, LABEL_W - 8), 4, p[1] + ROW_H / 2);
      ctx.fillStyle = c.line; ctx.fillRect(0, p[1] - 3, W, 1); ctx.fillStyle = c.fg;
    });
    ctx.fillStyle = c.muted;
    ctx.fillText("findings", 4, this.marksTop + MARK_LEVELS * MARK_LEVEL_H / 2);
    this.drawAxis(ctx);
    var ms = performance.now() - began;
    this.frames.push(ms); if (this.frames.length > 240) this.frames.shift();
    this.root.dataset.v0 = this.v0; this.root.dataset.v1 = this.v1; this.root.dataset.drawn = drawn;
    var info = this.root.querySelector(".tl-range");
    if (info) info.textContent = fmtAt(this.v0) + " \u2013 " + fmtAt(this.v1) + " (" + fmtUs(this.v1 - this.v0) + ")";
  };

  /* ticks counted, not stepped by adding: `t += step` stands still once step is below
     t's precision (a tiny view far from zero), and a span of 0 or NaN gives no step */
  Timeline.prototype.drawAxis = function (ctx) {
    var c = this.colors, span = this.v1 - this.v0, raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * p; }).filter(function (s) { return s >= raw; })[0];
    ctx.fillStyle = c.bg; ctx.fillRect(LABEL_W, 0, this.width - LABEL_W, AXIS_H);
    ctx.fillStyle = c.muted;
    var first = Math.ceil(this.v0 / step);
    for (var i = 0; step > 0 && isFinite(first) && i <= MAX_TICKS; i++) {
      var t = (first + i) * step;
      if (t > this.v1) break;
      var x = this.x(t);
      ctx.fillRect(x, AXIS_H - 5, 1, 5);
      ctx.fillText(fmtAt(t), x + 2, AXIS_H / 2);
    }
    ctx.fillRect(LABEL_W, AXIS_H - 1, this.width - LABEL_W, 1);
  };

  Timeline.prototype.eventRect = function (k) {
    var x0 = this.x(this.start[k]), x1 = this.x(this.end[k]);
    return [x0, this.rowY[this.rowOf[k]], Math.max(x1 - x0, 2), ROW_H - 1];
  };

  Timeline.prototype.drawHighlights = function (ctx) {
    var c = this.colors, self = this, on = [];
    if (this.finding >= 0) {
      var f = this.data.findings[this.finding];
      on = f.events.slice();
      ctx.fillStyle = c.accent; ctx.globalAlpha = 0.18;
      f.spans.forEach(function (s) {
        var x0 = self.x(s[0]), x1 = self.x(s[0] + s[1]);
        ctx.fillRect(x0, AXIS_H, Math.max(x1 - x0, 2), self.height - AXIS_H);
      });
      ctx.globalAlpha = 1;
    }
    var focus = this.pinned >= 0 ? this.pinned : this.hover;
    if (focus >= 0) { on.push(focus); if (this.link[focus] >= 0) on.push(this.link[focus]); }
    ctx.strokeStyle = c.accent; ctx.lineWidth = 2;
    on.forEach(function (k) { var r = self.eventRect(k); ctx.strokeRect(r[0] - 1, r[1] - 1, r[2] + 2, r[3] + 2); });
    if (focus >= 0 && this.link[focus] >= 0) {  // launch -> kernel arrow
      var launch = this.start[focus] <= this.start[this.link[focus]] ? focus : this.link[focus];
      var a = this.eventRect(launch), b = this.eventRect(this.link[launch]);
      ctx.beginPath(); ctx.moveTo(a[0], a[1] + a[3]); ctx.lineTo(b[0], b[1]); ctx.stroke();
      ctx.beginPath(); ctx.moveTo(b[0], b[1]); ctx.lineTo(b[0] - 4, b[1] - 6); ctx.lineTo(b[0] + 4, b[1] - 6); ctx.closePath();
      ctx.fillStyle = c.accent; ctx.fill();
    }
    this.root.dataset.highlighted = on.length;
  };

  /* finding markers: stacked in levels so none hides another, the most severe placed
     first (a critical marker always gets the top level at its spot); where every
     level is taken, a marker joins the nearest placed one as its "+n" count */
  Timeline.prototype.drawMarks = function (ctx) {
    var c = this.colors, self = this, W = 10, levels = [], placed = [];
    for (var l = 0; l < MARK_LEVELS; l++) levels.push([]);
    // the selected finding's markers first, then by severity: neither is ever folded into a count
    var rank = function (m) { return m.f === self.finding ? -1 : SEV_RANK[m.sev]; };
    var ordered = this.marks.slice().sort(function (a, b) { return rank(a) - rank(b) || a.t - b.t; });
    ordered.forEach(function (m) {
      var x = self.x(m.t);
      if (x < LABEL_W - 5 || x > self.width + 5) return;
      var lvl = 0;
      while (lvl < MARK_LEVELS && levels[lvl].some(function (p) { return Math.abs(p.x - x) < W; })) lvl++;
      if (lvl === MARK_LEVELS) {
        var near = placed.reduce(function (best, p) { return !best || Math.abs(p.x - x) < Math.abs(best.x - x) ? p : best; }, null);
        near.more++;
        return;
      }
      var p = { m: m, x: x, lvl: lvl, more: 0 };
      levels[lvl].push(p); placed.push(p);
    });
    placed.forEach(function (p) {  // counts first: a marker beside one is drawn over its text
      if (!p.more) return;
      ctx.fillStyle = c.fg;
      ctx.fillText("+" + p.more, p.x + 5, self.marksTop + p.lvl * MARK_LEVEL_H + 1 + MARK_LEVEL_H / 2);
    });
    placed.forEach(function (p) {
      var y = self.marksTop + p.lvl * MARK_LEVEL_H + 1, sel = p.m.f === self.finding;
      ctx.fillStyle = c[p.m.sev];
      ctx.beginPath(); ctx.moveTo(p.x - 4.5, y); ctx.lineTo(p.x + 4.5, y); ctx.lineTo(p.x, y + MARK_LEVEL_H - 2); ctx.closePath(); ctx.fill();
      if (sel) { ctx.strokeStyle = c.fg; ctx.lineWidth = 1.5; ctx.stroke(); }
    });
    this.placed = placed;
    this.root.dataset.marks = placed.length;
  };

  // what timeline_input.js builds on
  window.kinetoscopeTimeline = {
    Timeline: Timeline, fmtUs: fmtUs, fmtAt: fmtAt, LABEL_W: LABEL_W, ROW_H: ROW_H,
    MARK_LEVELS: MARK_LEVELS, MARK_LEVEL_H: MARK_LEVEL_H, MAX_ROWS: MAX_ROWS, MIN_SPAN_US: MIN_SPAN_US
  };
})();
