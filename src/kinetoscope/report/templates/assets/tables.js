/* Sortable tables: click a header to sort by that column (numbers by their data-v value,
   text otherwise); click again to reverse. */
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-v");
    return v !== null ? parseFloat(v) : cell.textContent.trim().toLowerCase();
  }
  function sort(table, col, th) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var desc = th.getAttribute("aria-sort") !== "descending";
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      var c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", desc ? "descending" : "ascending");
  }
  function init() {
    document.querySelectorAll(".ks table.sortable").forEach(function (table) {
      if (table.dataset.sortable) return;
      table.dataset.sortable = "1";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
        th.addEventListener("click", function () { sort(table, col, th); });
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
