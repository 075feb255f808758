// report.js: the page of attnsweep report --format html. Plain JavaScript drawing SVG by
// hand (no library, nothing loaded at view time); compiled into attnsweep by
// cmake/embed_text.cmake. Its data: the JSON in <script id="data">, {report: the JSON
// report, page: the trials and what the charts need} (src/report/html.c).
"use strict";
(function () {
  const t0 = performance.now();
  const DATA = JSON.parse(document.getElementById("data").textContent);
  const R = DATA.report, P = DATA.page;
  const NS = "http://www.w3.org/2000/svg";
  const maximize = R.goal === "maximize";
  const trials = P.trials;
  const params = P.params;
  // words and listed numbers (a values list: Optuna's categorical) get a band each on an axis
  params.forEach((p) => (p.bands = p.text || p.distribution === "values" || p.distribution === "categorical"));
  const fin = (v) => typeof v === "number" && isFinite(v);
  const app = document.getElementById("app");
  const charts = {};  // name -> svg, for the self-check

  // ---------------------------------------------------------------- helpers
  function el(tag, attrs, parent, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function sv(tag, attrs, parent, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "";
    if (typeof v !== "number") return String(v);
    if (!isFinite(v)) return "";
    const a = Math.abs(v);
    if (Number.isInteger(v) && a < 1e7) return String(v);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(2) : v.toPrecision(4).replace(/\.?0+$/, "");
  }
  // A scale: domain values -> [r0, r1]; log, linear, or points for words.
  function scale(values, r0, r1, opts) {
    opts = opts || {};
    if (opts.words) {  // bands, one per distinct value (numbers in their order), the value at its centre
      const seen = [...new Set(values.filter((v) => v !== null && v !== undefined))];
      const numbers = seen.every((v) => typeof v === "number");
      const words = (numbers ? seen.sort((x, y) => x - y) : seen.map(String).sort()).map(String);
      const step = (r1 - r0) / Math.max(1, words.length);
      const f = (v) => (words.indexOf(String(v)) < 0 ? NaN : r0 + (words.indexOf(String(v)) + 0.5) * step);
      f.ticks = () => (numbers ? words.map(Number) : words);
      f.words = words;
      f.band = Math.abs(step);
      f.invertRange = (a, b) => (v) => { const x = f(v); return x >= Math.min(a, b) && x <= Math.max(a, b); };
      return f;
    }
    const num = values.filter((v) => fin(v) && (!opts.log || v > 0));
    let lo = num.length ? Math.min(...num) : 0, hi = num.length ? Math.max(...num) : 1;
    const log = opts.log && lo > 0;
    const tr = log ? Math.log10 : (x) => x;
    let a = tr(lo), b = tr(hi);
    if (a === b) { a -= 0.5; b += 0.5; }
    const pad = opts.pad === undefined ? 0.04 : opts.pad;
    const span = b - a;
    a -= pad * span; b += pad * span;
    const f = (v) => (fin(v) && (!log || v > 0) ? r0 + ((tr(v) - a) / (b - a)) * (r1 - r0) : NaN);
    f.log = log;
    f.ticks = function () {
      if (log) {
        const out = [];
        for (let e = Math.ceil(a); e <= Math.floor(b); e++) out.push(Math.pow(10, e));
        if (out.length < 2) { out.length = 0; for (let i = 0; i <= 4; i++) out.push(Math.pow(10, a + (i * (b - a)) / 4)); }
        return out;
      }
      const raw = (b - a) / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
      const st = [1, 2, 5, 10].map((m) => m * mag).find((s) => (b - a) / s <= 6);
      const out = [];
      for (let x = Math.ceil(a / st) * st; x <= b + 1e-12 * Math.abs(b); x += st) out.push(Math.abs(x) < st * 1e-9 ? 0 : x);
      return out;
    };
    f.invertRange = (p, q) => (v) => { const x = f(v); return fin(x) && x >= Math.min(p, q) && x <= Math.max(p, q); };
    return f;
  }
  // A chart: an svg with a plot box; returns {svg, x0, x1, y0, y1}.
  function frame(parent, name, w, h, title) {
    const svg = sv("svg", { width: w, height: h, "data-chart": name }, parent);
    const box = { svg, x0: 52, x1: w - 12, y0: h - 34, y1: title ? 22 : 10 };
    if (title) sv("text", { x: w / 2, y: 14, "text-anchor": "middle", class: "title" }, svg, title);
    charts[name] = svg;
    return box;
  }
  function axes(box, xs, ys, xlabel, ylabel) {
    const g = sv("g", { class: "axis" }, box.svg);
    sv("line", { x1: box.x0, x2: box.x1, y1: box.y0, y2: box.y0 }, g);
    sv("line", { x1: box.x0, x2: box.x0, y1: box.y0, y2: box.y1 }, g);
    for (const t of xs.ticks()) {
      const x = xs(t);
      if (!fin(x)) continue;
      sv("line", { x1: x, x2: x, y1: box.y0, y2: box.y0 + 4 }, g);
      sv("text", { x, y: box.y0 + 14, "text-anchor": "middle" }, g, fmt(t));
    }
    for (const t of ys.ticks()) {
      const y = ys(t);
      if (!fin(y)) continue;
      sv("line", { x1: box.x0 - 4, x2: box.x0, y1: y, y2: y }, g);
      sv("text", { x: box.x0 - 6, y: y + 3, "text-anchor": "end" }, g, fmt(t));
    }
    if (xlabel) sv("text", { x: (box.x0 + box.x1) / 2, y: box.y0 + 28, "text-anchor": "middle" }, g, xlabel);
    if (ylabel) sv("text", { x: 10, y: (box.y0 + box.y1) / 2, transform: `rotate(-90 10 ${(box.y0 + box.y1) / 2})`, "text-anchor": "middle" }, g, ylabel);
  }
  // Viridis, sampled: t in [0, 1] -> colour.
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function colour(t) {
    if (!fin(t)) return "#bbb";
    t = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1);
    const i = Math.min(Math.floor(t), VIRIDIS.length - 2), f = t - i;
    const c = VIRIDIS[i].map((v, k) => Math.round(v + f * (VIRIDIS[i + 1][k] - v)));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }
  const STATUS_COLOUR = { ok: "#3478c8", pruned: "#e67e22", failed: "#c0392b" };
  const LINE_COLOURS = ["#3478c8", "#e67e22", "#27ae60", "#8e44ad", "#c0392b", "#16a085", "#d35400", "#2c3e50"];
  function section(title, id) {
    const s = el("section", { id }, main);
    el("h2", {}, s, title);
    return s;
  }
  function table(rows) {  // a report table (array of objects, or one object) as HTML
    rows = Array.isArray(rows) ? rows : rows ? [rows] : [];
    const t = el("table", { class: "trials" });
    if (!rows.length) return t;
    const keys = Object.keys(rows[0]);
    const hr = el("tr", {}, el("thead", {}, t));
    keys.forEach((k) => el("th", {}, hr, k));
    const tb = el("tbody", {}, t);
    const cell = (v) => (v && typeof v === "object" ? `${fmt(v.mean)} ± ${fmt(v.sd)}` : fmt(v));  // mean ± sd
    rows.forEach((r) => { const tr = el("tr", {}, tb); keys.forEach((k) => el("td", {}, tr, cell(r[k]))); });
    return t;
  }

  // ---------------------------------------------------------------- the page
  const header = el("header", {}, app);
  el("h1", {}, header, `attnsweep report: ${R.sweep}`);
  const sub = el("div", { class: "sub" }, header, `${R.file}: ${R.trials} trials, metric ${R.metric} (${maximize ? "higher" : "lower"} is better)`);
  if (R.being_written) el("span", { class: "running" }, sub, "sweep running: the trials flushed so far");
  const main = el("main", {}, app);
  const ok = trials.filter((t) => t.status === "ok" && fin(t.value));
  const better = (a, b) => (maximize ? a > b : a < b);

  // Overview
  {
    const s = section("Overview", "overview");
    const kv = el("div", { class: "kv" }, s);
    const row = (k, v) => { el("b", {}, kv, k); el("span", {}, kv, v); };
    row("metric", `${R.metric} (goal: ${R.goal})`);
    const counts = {};
    trials.forEach((t) => (counts[t.status] = (counts[t.status] || 0) + 1));
    row("trials", Object.keys(counts).map((k) => `${counts[k]} ${k}`).join(", ") || "none");
    const best = R.leaderboard && R.leaderboard.length ? R.leaderboard[0] : null;
    row("best trial", best ? `#${best.trial}: ${R.metric} = ${fmt(best[R.metric])}` : "none finished");
    const starts = trials.map((t) => t.start_time).filter((v) => fin(v) && v > 0);
    const ends = trials.map((t) => t.end_time).filter((v) => fin(v) && v > 0);
    if (starts.length && ends.length) {
      const a = Math.min(...starts), b = Math.max(...ends), hours = (b - a) / 3600;
      row("time span", `${new Date(a * 1000).toISOString().replace("T", " ").slice(0, 19)} to ${new Date(b * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC (${fmt((b - a) / 60)} min)`);
      row("trials per hour", hours > 0 ? fmt(trials.length / hours) : "");
    }
    const d = el("details", {}, s);
    el("summary", {}, d, "the sweep's YAML");
    el("pre", {}, d, P.yaml);
  }

  // Parameter importance
  const imp = (R.importance || []).filter((r) => fin(r.importance));
  if (imp.length) {
    const s = section("Parameter importance (fANOVA)", "importance");
    el("p", { class: "note" }, s, `The fraction of the variance of ${R.metric} that each parameter's main effect explains (a random forest of 64 trees over the finished trials; Optuna's default evaluator). The same numbers are in the JSON report under "importance".`);
    const h = 30 + 20 * imp.length, w = 620;
    const box = frame(s, "importance", w, h);
    box.x0 = 140;
    box.x1 = w - 70;  // room for the numbers
    const xs = scale([0, 1], box.x0, box.x1, { pad: 0 });
    imp.forEach((r, i) => {
      const y = box.y1 + 20 * i;
      sv("rect", { x: box.x0, y, width: Math.max(1, xs(r.importance) - box.x0), height: 14, fill: "#3478c8", class: "mark" }, box.svg);
      sv("text", { x: box.x0 - 6, y: y + 11, "text-anchor": "end" }, box.svg, r.parameter);
      sv("text", { x: xs(r.importance) + 4, y: y + 11 }, box.svg, fmt(r.importance));
    });
  }

  // The verdict (attnsweep report's): does the reward add information in this sweep?
  const V = R.verdict || {};
  const vfit = Array.isArray(V.fit) ? V.fit : [], vtau = Array.isArray(V.tau) ? V.tau : [];
  if (vfit.length || vtau.length) {
    const s = section("Verdict: does the reward help?", "verdict");
    el("p", { class: "note" }, s, "Kendall τ of each early predictor (validation metric, RankDeviation, Correlation, reward) against the final validation metric, with a bootstrap 95 % interval over configurations, and a fit of the final metric on early validation accuracy and the invariant terms: the report's verdict tables, never the test split.");
    for (const row of vfit) if (row.answer) el("p", {}, s, `${row.attention}: ${row.answer}`);
    const put = (rows, title, open) => {
      if (!rows.length) return;
      const d = el("details", open ? { open: "" } : {}, s);
      el("summary", {}, d, title);
      el("div", { class: "wide" }, d).appendChild(table(rows));
    };
    put(vfit, `fit (${vfit.length})`, true);
    put(vtau, `Kendall τ at each evaluation (${vtau.length})`, false);
  }

  // Optimisation history
  {
    const s = section("Optimisation history", "history");
    const box = frame(s, "history", 900, 300);
    const measured = trials.filter((t) => fin(t.value));
    const xs = scale(trials.map((t) => t.trial), box.x0, box.x1);
    const ys = scale(measured.map((t) => t.value), box.y0, box.y1);
    axes(box, xs, ys, "trial", R.metric);
    let best = null;
    const path = [];
    trials.slice().sort((a, b) => a.trial - b.trial).forEach((t) => {
      if (t.status === "ok" && fin(t.value) && (best === null || better(t.value, best))) best = t.value;
      if (best !== null) path.push(`${path.length ? "L" : "M"}${xs(t.trial)},${ys(best)}`);
    });
    if (path.length) sv("path", { d: path.join(""), fill: "none", stroke: "#c0392b", "stroke-width": 1.5 }, box.svg);
    trials.forEach((t) => {
      const x = xs(t.trial);
      if (t.status === "failed" || !fin(t.value)) {
        sv("text", { x, y: box.y0 - 3, "text-anchor": "middle", fill: STATUS_COLOUR.failed, "font-size": 11 }, box.svg, "×");
      } else {
        sv("circle", { cx: x, cy: ys(t.value), r: 3, fill: STATUS_COLOUR[t.status] || "#888", opacity: 0.8 }, box.svg);
      }
    });
    const lg = el("div", { class: "legend note" }, s);
    for (const [k, c] of [["ok", STATUS_COLOUR.ok], ["pruned (its last value)", STATUS_COLOUR.pruned], ["failed (×, no value)", STATUS_COLOUR.failed], ["best so far", "#c0392b"]]) {
      const sp = el("span", {}, lg);
      el("span", { class: "swatch", style: `background:${c}` }, sp);
      sp.appendChild(document.createTextNode(k));
    }
  }

  // The trials table's filters: the brushes of the parallel coordinates, and a text filter.
  const brushes = {};  // axis name -> predicate on a trial
  let textFilter = "";
  let refreshTable = () => {};
  let refreshLines = () => {};

  // Parallel coordinates
  const axesPC = params.map((p) => ({ name: p.name, get: (t) => t.params[p.name], words: p.bands, log: p.log }))
    .concat([{ name: R.metric, get: (t) => t.value, words: false, log: false }]);
  if (params.length && ok.length) {
    const s = section("Parallel coordinates", "parallel");
    el("p", { class: "note" }, s, "Finished trials, coloured by the metric. Drag along an axis to brush it: the trials table shows only the trials inside every brush (click an axis to clear its brush).");
    const w = Math.max(700, Math.min(1300, 160 * axesPC.length)), h = 340;
    const box = frame(s, "parallel", w, h);
    const xs = (i) => 60 + (i * (w - 120)) / Math.max(1, axesPC.length - 1);
    const cs = scale(ok.map((t) => t.value), 0, 1, { pad: 0 });
    axesPC.forEach((a) => { a.scale = scale(ok.map(a.get), h - 30, 30, { words: a.words, log: a.log }); });
    const lines = ok.map((t) => {
      const pts = axesPC.map((a, i) => [xs(i), a.scale(a.get(t))]);
      const d = pts.filter((q) => fin(q[1])).map((q, i) => `${i ? "L" : "M"}${q[0]},${q[1]}`).join("");
      const e = sv("path", { d, class: "pc-line", stroke: colour(maximize ? cs(t.value) : 1 - cs(t.value)) }, box.svg);
      return { t, e };
    });
    refreshLines = () => lines.forEach((l) => l.e.classList.toggle("off", !passes(l.t)));
    axesPC.forEach((a, i) => {
      const x = xs(i);
      const g = sv("g", { class: "axis", "data-axis": a.name }, box.svg);
      sv("line", { x1: x, x2: x, y1: 30, y2: h - 30, stroke: "#666" }, g);
      sv("text", { x, y: 18, "text-anchor": "middle", class: "title" }, g, a.name + (a.log ? " (log)" : ""));
      for (const tk of a.scale.ticks()) {
        const y = a.scale(tk);
        if (fin(y)) sv("text", { x: x - 5, y: y + 3, "text-anchor": "end" }, g, fmt(tk));
      }
      // the brush: a transparent strip over the axis takes the drag
      const hit = sv("rect", { x: x - 12, y: 30, width: 24, height: h - 60, fill: "transparent", class: "brush-target", "data-axis": a.name }, g);
      const shown = sv("rect", { x: x - 8, y: 0, width: 16, height: 0, class: "brush", visibility: "hidden" }, g);
      let from = null;
      const yOf = (ev) => ev.clientY - box.svg.getBoundingClientRect().top;
      hit.addEventListener("mousedown", (ev) => { from = yOf(ev); ev.preventDefault(); });
      window.addEventListener("mousemove", (ev) => {
        if (from === null) return;
        const y = yOf(ev);
        shown.setAttribute("y", Math.min(from, y));
        shown.setAttribute("height", Math.abs(y - from));
        shown.setAttribute("visibility", "visible");
      });
      window.addEventListener("mouseup", (ev) => {
        if (from === null) return;
        const y = yOf(ev), a0 = from;
        from = null;
        if (Math.abs(y - a0) < 3) {
          delete brushes[a.name];
          shown.setAttribute("visibility", "hidden");
        } else {
          const inside = a.scale.invertRange(a0, y);
          brushes[a.name] = (t) => inside(a.get(t));
        }
        refreshLines();
        refreshTable();
      });
    });
  }
  function passes(t) {
    for (const k in brushes) if (!brushes[k](t)) return false;
    if (textFilter) {
      const hay = [t.trial, t.status, t.reason, t.host, ...Object.values(t.params)].join(" ").toLowerCase();
      if (!hay.includes(textFilter)) return false;
    }
    return true;
  }

  // Slices
  if (params.length) {
    const s = section("Slices: the metric against each parameter", "slices");
    const grid = el("div", { class: "grid" }, s);
    const measured = trials.filter((t) => fin(t.value) && t.status !== "failed");
    const ys0 = measured.map((t) => t.value);
    params.forEach((p, k) => {
      const box = frame(grid, `slice_${p.name}`, 300, 230, p.name + (p.log ? " (log axis)" : ""));
      const vals = measured.map((t) => t.params[p.name]);
      const xs = scale(vals, box.x0, box.x1, { words: p.bands, log: p.log });
      const ys = scale(ys0, box.y0, box.y1);
      axes(box, xs, ys, "", k === 0 ? R.metric : "");
      measured.forEach((t, i) => {
        const jitter = p.bands ? ((i * 7919) % 13 - 6) : 0;
        const x = xs(t.params[p.name]);
        if (fin(x)) sv("circle", { cx: x + jitter, cy: ys(t.value), r: 2.5, fill: STATUS_COLOUR[t.status], opacity: 0.7 }, box.svg);
      });
    });
  }

  // Contour: a binned heat map of a chosen pair
  if (params.length >= 2 && ok.length) {
    const s = section("Contour: the metric over two parameters", "contour");
    const ctl = el("div", { class: "note" }, s);
    const selA = el("select", {}, ctl), selB = el("select", {}, ctl);
    params.forEach((p) => { el("option", { value: p.name }, selA, p.name); el("option", { value: p.name }, selB, p.name); });
    // the two most important parameters first (the importance's order, then the YAML's)
    const rank = (p) => { const i = imp.findIndex((r) => r.parameter === p.name); return i < 0 ? imp.length + params.indexOf(p) : i; };
    const pick = params.slice().sort((p, q) => rank(p) - rank(q)).slice(0, 2).map((p) => p.name);
    selA.value = pick[0];
    selB.value = pick[1];
    ctl.appendChild(document.createTextNode(" mean of the finished trials in each cell; the dots are the trials"));
    const holder = el("div", {}, s);
    const draw = () => {
      holder.textContent = "";
      const pa = params.find((p) => p.name === selA.value), pb = params.find((p) => p.name === selB.value);
      const box = frame(holder, "contour", 520, 400, `${pa.name} × ${pb.name}`);
      // an axis of at most 12 distinct values has a band each; a longer one 12 equal bins (on its scale)
      const axis = (p, r0, r1) => {
        const vals = ok.map((t) => t.params[p.name]);
        const few = p.bands || new Set(vals.filter((v) => v !== null)).size <= 12;
        const sc = scale(vals, r0, r1, { words: few, log: p.log, pad: 0 });
        const n = few ? sc.words.length : 12;
        sc.cell = (v) => { const x = sc(v); return fin(x) ? Math.min(n - 1, Math.floor(((x - r0) / (r1 - r0)) * n)) : -1; };
        sc.n = n;
        return sc;
      };
      const xs = axis(pa, box.x0, box.x1), ys = axis(pb, box.y0, box.y1);
      const nx = xs.n, ny = ys.n;
      const sum = new Float64Array(nx * ny), cnt = new Float64Array(nx * ny);
      ok.forEach((t) => {
        const i = xs.cell(t.params[pa.name]), j = ys.cell(t.params[pb.name]);
        if (i >= 0 && j >= 0) { sum[j * nx + i] += t.value; cnt[j * nx + i] += 1; }
      });
      const means = [];
      for (let k = 0; k < nx * ny; k++) if (cnt[k]) means.push(sum[k] / cnt[k]);
      const cs = scale(means, 0, 1, { pad: 0 });
      const cw = (box.x1 - box.x0) / nx, ch = (box.y0 - box.y1) / ny;
      for (let j = 0; j < ny; j++)
        for (let i = 0; i < nx; i++) {
          const k = j * nx + i;
          if (!cnt[k]) continue;
          const m = sum[k] / cnt[k];
          sv("rect", { x: box.x0 + i * cw, y: box.y0 - (j + 1) * ch, width: cw, height: ch, fill: colour(maximize ? cs(m) : 1 - cs(m)), opacity: 0.85, class: "mark" }, box.svg).appendChild(sv("title", {}, null, `${R.metric} mean ${fmt(m)} (n = ${cnt[k]})`));
        }
      axes(box, xs, ys, pa.name + (pa.log ? " (log)" : ""), pb.name + (pb.log ? " (log)" : ""));
      ok.forEach((t) => {
        const x = xs(t.params[pa.name]), y = ys(t.params[pb.name]);
        if (fin(x) && fin(y)) sv("circle", { cx: x, cy: y, r: 2, fill: "#fff", stroke: "#222", "stroke-width": 0.6 }, box.svg);
      });
    };
    selA.addEventListener("change", draw);
    selB.addEventListener("change", draw);
    draw();
  }

  // Learning curves and invariant traces of chosen trials
  const chosen = new Set(ok.slice().sort((a, b) => (maximize ? b.value - a.value : a.value - b.value)).slice(0, 5).map((t) => t.trial));
  const hasCurves = trials.some((t) => t.curve && t.curve.step.length);
  const hasTrace = trials.some((t) => t.curve && t.curve.correlation_z);
  let drawCurves = () => {};
  function lineChart(parent, name, title, key, list, ylabel, level) {
    const box = frame(parent, name, 440, 260, title);
    const xsAll = [], ysAll = [];
    list.forEach((t) => t.curve.step.forEach((s, i) => { if (fin(t.curve[key] && t.curve[key][i])) { xsAll.push(s); ysAll.push(t.curve[key][i]); } }));
    const levels = Array.isArray(level) ? level : fin(level) ? [level] : [];
    const xs = scale(xsAll.concat(P.rungs), box.x0, box.x1), ys = scale(ysAll.concat(levels), box.y0, box.y1);
    axes(box, xs, ys, "step", ylabel);
    if (levels.length === 2)  // chance's band: shaded
      sv("rect", { x: box.x0, width: box.x1 - box.x0, y: ys(levels[1]), height: ys(levels[0]) - ys(levels[1]), fill: "#ddd" }, box.svg).appendChild(sv("title", {}, null, `chance: ${fmt(levels[0])} to ${fmt(levels[1])}`));
    else if (levels.length === 1)  // a chance level: dotted
      sv("line", { x1: box.x0, x2: box.x1, y1: ys(level), y2: ys(level), stroke: "#555", "stroke-dasharray": "1 3" }, box.svg).appendChild(sv("title", {}, null, `chance ${fmt(level)}`));
    P.rungs.forEach((r) => sv("line", { x1: xs(r), x2: xs(r), y1: box.y0, y2: box.y1, stroke: "#999", "stroke-dasharray": "4 3" }, box.svg).appendChild(sv("title", {}, null, `ASHA rung at step ${r}`)));
    list.forEach((t, k) => {
      const pts = [];
      t.curve.step.forEach((s, i) => { const v = t.curve[key] && t.curve[key][i]; if (fin(v)) pts.push(`${pts.length ? "L" : "M"}${xs(s)},${ys(v)}`); });
      if (pts.length) sv("path", { d: pts.join(""), fill: "none", stroke: LINE_COLOURS[k % LINE_COLOURS.length], "stroke-width": 1.5 }, box.svg).appendChild(sv("title", {}, null, `trial ${t.trial}`));
      if (pts.length === 1) { const m = /M([^,]+),(.+)/.exec(pts[0]); sv("circle", { cx: m[1], cy: m[2], r: 3, fill: LINE_COLOURS[k % LINE_COLOURS.length] }, box.svg); }
    });
  }
  if (hasCurves) {
    const s = section("Learning curves", "curves");
    el("p", { class: "note" }, s, `The trials chosen in the table (click a row; by default the five best). Dashed: ASHA's rungs${P.rungs.length ? "" : " (none in this sweep)"}.`);
    const legend = el("div", { class: "legend note" }, s);
    const grid = el("div", { class: "grid" }, s);
    let traceGrid = null;
    if (hasTrace) {
      const s2 = section("Invariant traces", "traces");
      el("p", { class: "note" }, s2, "Where the heads lie on chance at each evaluation of the chosen trials, in standard deviations of the rotation null (each head's objects rotated at random, spectra kept): Correlation's z (above 0: heads more alike than chance) and the heads' effective rank's z (below 0: fewer distinct heads than chance). Shaded: within 2 of chance, where the reward's terms charge about nothing. Grassmann has no heads and no trace here.");
      traceGrid = el("div", { class: "grid" }, s2);
    }
    drawCurves = () => {
      const list = trials.filter((t) => chosen.has(t.trial) && t.curve.step.length);
      grid.textContent = "";
      legend.textContent = "";
      list.forEach((t, k) => {
        const sp = el("span", {}, legend);
        el("span", { class: "swatch", style: `background:${LINE_COLOURS[k % LINE_COLOURS.length]}` }, sp);
        sp.appendChild(document.createTextNode(`trial ${t.trial} (${t.status})`));
      });
      lineChart(grid, "curve_val_accuracy", "validation accuracy", "val_accuracy", list, "val_accuracy");
      lineChart(grid, "curve_val_loss", "validation loss", "val_loss", list, "val_loss");
      if (traceGrid) {
        traceGrid.textContent = "";
        const traced = list.filter((t) => t.curve.correlation_z);
        lineChart(traceGrid, "trace_correlation", "Correlation z (shaded: chance)", "correlation_z", traced, "z", [-2, 2]);
        lineChart(traceGrid, "trace_eff_rank", "heads' effective rank z (shaded: chance)", "eff_rank_z", traced, "z", [-2, 2]);
      }
    };
    drawCurves();
  }

  // Pareto front (several objectives)
  if (P.objectives.length >= 2 && ok.length) {
    const s = section("Pareto front", "pareto");
    const front = new Set((R.pareto || []).map((r) => r.trial));
    el("p", { class: "note" }, s, `${front.size} trials on the front of ${P.objectives.map((o) => `${o.name} (${o.maximize ? "max" : "min"})`).join(", ")}; the hypervolume is in the text and JSON reports.`);
    const grid = el("div", { class: "grid" }, s);
    const o0 = P.objectives[0];
    P.objectives.slice(1).forEach((o, k) => {
      const box = frame(grid, `pareto_${k}`, 420, 300, `${o0.name} against ${o.name}`);
      const get = (t, m) => t[m];
      const pts = ok.filter((t) => fin(get(t, o0.name)) && fin(get(t, o.name)));
      const xs = scale(pts.map((t) => get(t, o.name)), box.x0, box.x1), ys = scale(pts.map((t) => get(t, o0.name)), box.y0, box.y1);
      axes(box, xs, ys, o.name, o0.name);
      pts.forEach((t) => sv("circle", { cx: xs(get(t, o.name)), cy: ys(get(t, o0.name)), r: front.has(t.trial) ? 4 : 2.5, fill: front.has(t.trial) ? "#c0392b" : "#9fb6cf" }, box.svg).appendChild(sv("title", {}, null, `trial ${t.trial}`)));
    });
  }

  // Trials table
  const s = section("Trials", "trials");
  const ctl = el("div", { class: "note" }, s);
  ctl.appendChild(document.createTextNode("filter: "));
  const filterBox = el("input", { type: "search", placeholder: "words in status, reason, host, parameters", size: 40 }, ctl);
  const countLine = el("span", { id: "shown-count" }, ctl);
  const metricsShown = ["val_accuracy", "val_loss", "test_accuracy", "reward", "rank_deviation", "correlation", "correlation_z", "eff_rank_z"].filter((m) => m !== R.metric && trials.some((t) => fin(t[m])));
  const cols = [["trial", (t) => t.trial], ["status", (t) => t.status], [R.metric, (t) => t.value]]
    .concat(params.map((p) => [p.name, (t) => t.params[p.name]]))
    .concat(metricsShown.map((m) => [m, (t) => t[m]]))
    .concat([["seed", (t) => t.seed], ["host", (t) => t.host], ["steps", (t) => t.steps], ["seconds", (t) => t.seconds], ["reason", (t) => t.reason]]);
  const box = el("div", { class: "tablebox" }, s);
  const tab = el("table", { class: "trials", id: "trials-table" }, box);
  const hr = el("tr", {}, el("thead", {}, tab));
  const tbody = el("tbody", {}, tab);
  let sortBy = 0, sortDir = 1;
  cols.forEach((c, i) => el("th", {}, hr, c[0]).addEventListener("click", () => { sortDir = sortBy === i ? -sortDir : 1; sortBy = i; refreshTable(); }));
  const detail = el("section", { id: "detail", hidden: "" }, main);
  refreshTable = () => {
    const get = cols[sortBy][1];
    const rows = trials.filter(passes).sort((a, b) => {
      const x = get(a), y = get(b);
      if (x === y) return a.trial - b.trial;
      if (x === null || x === undefined || (typeof x === "number" && !isFinite(x))) return 1;
      if (y === null || y === undefined || (typeof y === "number" && !isFinite(y))) return -1;
      return (x < y ? -1 : 1) * sortDir;
    });
    tbody.textContent = "";
    const frag = document.createDocumentFragment();
    rows.forEach((t) => {
      const tr = el("tr", { "data-trial": t.trial, class: chosen.has(t.trial) ? "chosen" : "" }, frag);
      cols.forEach((c, i) => el("td", i === 1 ? { class: `status-${t.status}` } : {}, tr, fmt(c[1](t))));
      tr.addEventListener("click", () => show(t));
    });
    tbody.appendChild(frag);
    countLine.textContent = ` ${rows.length} of ${trials.length} trials shown`;
    countLine.setAttribute("data-shown", rows.length);
  };
  filterBox.addEventListener("input", () => { textFilter = filterBox.value.toLowerCase(); refreshTable(); });
  function show(t) {
    if (chosen.has(t.trial)) chosen.delete(t.trial); else chosen.add(t.trial);
    drawCurves();
    refreshTable();
    detail.hidden = false;
    detail.textContent = "";
    el("h2", {}, detail, `Trial ${t.trial}: ${t.status}${t.reason ? ` (${t.reason})` : ""}`);
    const kv = el("div", { class: "kv" }, detail);
    for (const k of [R.metric, "val_accuracy", "val_loss", "test_accuracy", "test_loss", "rank_deviation", "correlation", "correlation_chance", "correlation_z", "eff_rank_z", "rank_deviation_excess", "correlation_excess", "reward", "steps", "seconds", "seed", "host", "rank"]) {
      const v = k === R.metric ? t.value : t[k];
      if (v !== undefined && v !== null && v !== "") { el("b", {}, kv, k); el("span", {}, kv, fmt(v)); }
    }
    if (t.command) { el("b", {}, detail, "command"); el("pre", {}, detail, t.command); }
    if (t.stderr_tail) { el("b", {}, detail, "stderr (last lines)"); el("pre", {}, detail, t.stderr_tail); }
    el("b", {}, detail, "configuration");
    el("pre", {}, detail, JSON.stringify(t.config, null, 1));
    if (t.curve.step.length) {
      const g = el("div", { class: "grid" }, detail);
      lineChart(g, "detail_val_accuracy", "validation accuracy", "val_accuracy", [t], "");
      lineChart(g, "detail_val_loss", "validation loss", "val_loss", [t], "");
    }
  }
  refreshTable();

  // The other tables of the report
  {
    const s2 = section("Report tables", "tables");
    el("p", { class: "note" }, s2, "The sections of attnsweep report, from the same JSON.");
    const put = (title, rows) => {
      rows = Array.isArray(rows) ? rows : rows ? [rows] : [];
      if (!rows.length) return;
      const d = el("details", {}, s2);
      el("summary", {}, d, `${title} (${rows.length})`);
      d.appendChild(table(rows));
    };
    put("leaderboard", R.leaderboard);
    put("pareto", R.pareto);
    if (R.variants) { put("variants by variant", R.variants.by_variant); put("variants by configuration", R.variants.by_configuration); }
    if (R.ablations) for (const k in R.ablations) put(`ablation of ${k}`, R.ablations[k]);
    if (R.failures) { put("failures by status", R.failures.by_status); put("failures by reason", R.failures.by_reason); put("steps ASHA saved", R.failures.asha); }
  }

  // ---------------------------------------------------------------- self-check
  // Every chart drew (marks in its svg), and under #selftest a brush dragged by mouse
  // events on the first parallel axis must leave the table the trials inside it.
  const check = { render_ms: 0, open_ms: 0, charts: {} };
  // marks: data drawn (points, lines, bars and cells), not axes or brushes
  for (const k in charts) check.charts[k] = charts[k].querySelectorAll("circle, path, rect.mark").length;
  if (location.hash === "#selftest" && document.querySelector(".brush-target")) {
    const hit = document.querySelector(".brush-target");
    const name = hit.getAttribute("data-axis");
    const a = axesPC.find((x) => x.name === name);
    const r = hit.getBoundingClientRect();
    const before = tbody.rows.length;
    const y0 = r.top - 2, y1 = r.top + r.height * 0.6;  // the upper 60 % of the axis
    const fire = (type, y, target) => target.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, clientX: r.left + r.width / 2, clientY: y }));
    fire("mousedown", y0, hit);
    fire("mousemove", y1, window);
    fire("mouseup", y1, window);
    const svgTop = charts.parallel.getBoundingClientRect().top;
    const inside = a.scale.invertRange(y0 - svgTop, y1 - svgTop);
    const expected = trials.filter((t) => inside(a.get(t))).map((t) => t.trial).sort((p, q) => p - q);
    const shown = [...tbody.rows].map((row) => +row.getAttribute("data-trial")).sort((p, q) => p - q);
    check.brush = { axis: name, before, after: shown.length, expected: expected.length, same: JSON.stringify(shown) === JSON.stringify(expected) };
  }
  check.render_ms = Math.round(performance.now() - t0);  // the script: parse the data, draw
  check.open_ms = Math.round(performance.now());  // since the navigation began: reading the file too
  el("pre", { id: "selfcheck", hidden: "" }, document.body, JSON.stringify(check));
})();
