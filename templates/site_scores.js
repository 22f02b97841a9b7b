// scores.html: a search box over the ranking's rows (the table itself is static HTML, readable
// without script). Rows are hidden or shown; nothing from the data is parsed as HTML.
(function () {
  "use strict";
  var box = document.getElementById("scores-search");
  var input = document.getElementById("scores-filter");
  var table = document.getElementById("scores-table");
  var count = document.getElementById("scores-count");
  if (!box || !input || !table) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var texts = rows.map(function (tr) { return tr.textContent.toLowerCase(); });
  function apply() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (tr, i) {
      var match = words.every(function (w) { return texts[i].indexOf(w) >= 0; });
      tr.hidden = !match;
      if (match) shown += 1;
    });
    count.textContent = shown + " of " + rows.length + " shown";
  }
  input.addEventListener("input", apply);
  box.hidden = false;
  apply();
  window.hubsurveyScores = { apply: apply };
})();
