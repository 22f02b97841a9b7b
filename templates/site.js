// The index's table: every surveyed dataset, loaded from data/index-N.js (each calls hubsurvey.add),
// searched, filtered and sorted in memory, and drawn a window at a time: only the rows in view (and a
// few around them) are in the DOM, so a keystroke costs the same at 1,000 datasets or 1,000,000.
// Every value is set with textContent: nothing from the data is ever parsed as HTML.
(function () {
  "use strict";
  var COLUMNS = ["id", "href", "verdict", "contaminated_pct", "near_pct", "benchmarks", "family", "tasks"];
  var C = {};
  COLUMNS.forEach(function (name, i) { C[name] = i; });
  var VERDICT_ORDER = { clean: 0, minor: 1, caution: 2, unreliable: 3 };
  var ROW_HEIGHT = 32, OVERSCAN = 10;
  var rows = [], keys = [], shown = [], loaded = 0, chunks = 0;
  var sortKey = "id", sortDir = 1;
  var times = { firstDraw: null, allLoaded: null };  // ms since navigation start (the benchmark reads them)
  var el = {};

  // a figure as the published tables write it: NR for null, up to 3 decimals and a trailing ".0"
  function pct3(v) {
    if (v === null || v === undefined) return "NR";
    var s = String(v);
    return (s.indexOf(".") < 0 && s.indexOf("e") < 0 ? s + ".0" : s) + "%";
  }

  function cellText(row, name) {
    var v = row[C[name]];
    if (name === "contaminated_pct" || name === "near_pct") return pct3(v);
    if (Array.isArray(v)) return v.join(", ");
    return v === null || v === undefined ? "" : String(v);
  }

  function compare(a, b) {
    var x = a[C[sortKey]], y = b[C[sortKey]];
    if (sortKey === "verdict") { x = VERDICT_ORDER[x]; y = VERDICT_ORDER[y]; }
    if (Array.isArray(x)) { x = x.length ? x.join(", ") : null; y = y.length ? y.join(", ") : null; }
    if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;  // NR last, either way
    if (y === null || y === undefined) return -1;
    var d = x < y ? -1 : x > y ? 1 : 0;
    return d * sortDir || (a[C.id] < b[C.id] ? -1 : a[C.id] > b[C.id] ? 1 : 0);
  }

  function apply(toTop) {
    var q = el.search.value.trim().toLowerCase(), verdict = el.verdict.value, task = el.task.value;
    var out = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (q && keys[i].indexOf(q) < 0) continue;
      if (verdict && r[C.verdict] !== verdict) continue;
      if (task && r[C.tasks].indexOf(task) < 0) continue;
      out.push(r);
    }
    shown = out;
    el.count.textContent = "Showing " + shown.length + " of " + rows.length + " datasets" +
      (loaded < chunks ? " (loading " + loaded + " of " + chunks + " parts)" : "");
    if (toTop !== false) el.scroller.scrollTop = 0;  // a new search starts at the top; a chunk arriving does not move it
    draw();
  }

  function resort() {
    var order = rows.map(function (r, i) { return [r, keys[i]]; });
    order.sort(function (a, b) { return compare(a[0], b[0]); });
    rows = order.map(function (p) { return p[0]; });
    keys = order.map(function (p) { return p[1]; });
    apply();
  }

  function spacer(height) {
    var tr = document.createElement("tr");
    tr.className = "spacer";
    tr.setAttribute("aria-hidden", "true");
    var td = document.createElement("td");
    td.colSpan = 7;
    td.style.height = height + "px";
    tr.appendChild(td);
    return tr;
  }

  function draw() {
    var view = Math.max(el.scroller.clientHeight, window.innerHeight || 0, 600);  // max-height: may still grow
    var first = Math.max(0, Math.floor(el.scroller.scrollTop / ROW_HEIGHT) - OVERSCAN);
    var last = Math.min(shown.length, Math.ceil((el.scroller.scrollTop + view) / ROW_HEIGHT) + OVERSCAN);
    var body = document.createDocumentFragment();
    body.appendChild(spacer(first * ROW_HEIGHT));
    for (var i = first; i < last; i++) {
      var r = shown[i], tr = document.createElement("tr");
      tr.setAttribute("aria-rowindex", String(i + 2));
      var th = document.createElement("th"), a = document.createElement("a");
      th.scope = "row";
      a.href = r[C.href];  // d/<shard>/<safe name>.html, built by the site: never a scheme
      a.textContent = r[C.id];
      a.title = r[C.id];  // the whole id, where the cell cuts it
      th.appendChild(a);
      tr.appendChild(th);
      ["verdict", "contaminated_pct", "near_pct", "benchmarks", "family", "tasks"].forEach(function (name) {
        var td = document.createElement("td");
        if (name === "verdict") {
          var span = document.createElement("span");
          span.className = "verdict verdict-" + r[C.verdict];
          span.textContent = r[C.verdict];
          td.appendChild(span);
        } else {
          td.textContent = cellText(r, name);
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
    body.appendChild(spacer(Math.max(0, (shown.length - last) * ROW_HEIGHT)));
    el.rows.replaceChildren(body);
    el.table.setAttribute("aria-rowcount", String(shown.length + 1));
    if (times.firstDraw === null && shown.length) times.firstDraw = window.performance.now();
  }

  function load(n) {
    var script = document.createElement("script");
    script.src = "data/index-" + n + ".js";
    script.onerror = function () { el.count.textContent = "could not load data/index-" + n + ".js"; };
    document.body.appendChild(script);
  }

  var api = {
    // one chunk of rows: n of total; the first draws the table, the others follow one by one
    add: function (n, total, part) {
      chunks = total;
      for (var i = 0; i < part.length; i++) {
        rows.push(part[i]);
        keys.push(String(part[i][C.id]).toLowerCase());
      }
      loaded += 1;
      // the chunks come in id order: only a table the reader has sorted otherwise is sorted again
      if (sortKey !== "id" || sortDir !== 1) resort(); else apply(false);
      if (loaded === chunks) times.allLoaded = window.performance.now();
      if (n + 1 < total) load(n + 1);
    },
    // what the browser tests and the benchmark read
    state: function () { return { rows: rows.length, shown: shown.length, loaded: loaded, chunks: chunks }; },
    times: function () { return times; }
  };
  window.hubsurvey = api;

  function start() {
    ["table", "rows", "scroller", "controls", "search", "verdict", "task", "count"].forEach(function (id) {
      el[id] = document.getElementById(id);
    });
    if (!el.table) return;
    el.controls.hidden = false;
    el.scroller.hidden = false;
    ["search", "verdict", "task"].forEach(function (id) {
      el[id].addEventListener(id === "search" ? "input" : "change", function () { apply(true); });
    });
    el.scroller.addEventListener("scroll", function () { window.requestAnimationFrame(draw); }, { passive: true });
    Array.prototype.forEach.call(el.table.querySelectorAll("th[data-sort]"), function (th) {
      th.querySelector("button").addEventListener("click", function () {
        var key = th.getAttribute("data-sort");
        sortDir = key === sortKey ? -sortDir : 1;
        sortKey = key;
        Array.prototype.forEach.call(el.table.querySelectorAll("th[data-sort]"), function (o) { o.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
        resort();
      });
    });
    chunks = Number(el.table.getAttribute("data-chunks")) || 1;
    load(0);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
