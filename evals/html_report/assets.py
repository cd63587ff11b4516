"""The page's own style and its one script (the case filters): inlined, nothing loaded from anywhere."""

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2937;margin:0;background:#f8fafc}
header,main{max-width:1250px;margin:0 auto;padding:12px 20px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:26px 0 8px;border-bottom:2px solid #cbd5e1}
h3{font-size:15px;margin:14px 0 6px}
nav a{margin-right:12px}
section{background:#fff;border:1px solid #e2e8f0;border-radius:6px;padding:4px 16px 14px;margin:14px 0}
.grid{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.grid>div{min-width:300px}
table{border-collapse:collapse;margin:4px 0}
th,td{border-bottom:1px solid #e5e7eb;padding:2px 8px;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.swatch{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.up{color:#15803d}.down{color:#b91c1c}.flat{color:#6b7280}
.muted{color:#6b7280}.small{font-size:12px}
.filters{position:sticky;top:0;background:#f8fafc;padding:8px 0;z-index:1;border-bottom:1px solid #e2e8f0}
.filters label{margin-right:14px}
details.case{background:#fff;border:1px solid #e2e8f0;border-radius:5px;margin:5px 0;padding:4px 10px}
details.case>summary{cursor:pointer}
[hidden]{display:none!important}
.badge{display:inline-block;border-radius:9px;padding:0 7px;font-size:12px;margin-left:4px;color:#fff}
.o-all-facts,.o-rightly-abstained{background:#15803d}.o-some-facts{background:#ca8a04}
.o-no-facts,.o-wrongly-abstained,.o-answered-unanswerable{background:#b91c1c}.o-n-a{background:#64748b}
.runs{display:flex;gap:14px;flex-wrap:wrap}.runs>div{flex:1 1 480px;min-width:0}
pre.answer{white-space:pre-wrap;word-break:break-word;background:#f1f5f9;padding:8px;border-radius:4px;
max-height:420px;overflow:auto;font-size:12.5px}
.cite{background:#e0e7ff;border-radius:3px}.cite.gold{background:#bbf7d0}
li.gold{font-weight:600;color:#15803d}
.ok{color:#15803d}.bad{color:#b91c1c}
svg.chart{max-width:100%;height:auto;font-family:inherit}
"""

JS = """
(function () {
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var cases = Array.prototype.slice.call(document.querySelectorAll("details.case"));
  function apply() {
    var shown = 0;
    cases.forEach(function (c) {
      var ok = selects.every(function (s) {
        var tokens = " " + (c.getAttribute("data-" + s.getAttribute("data-filter")) || "") + " ";
        return !s.value || tokens.indexOf(" " + s.value + " ") >= 0;
      });
      c.hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.getElementById("shown").textContent = String(shown);
  }
  selects.forEach(function (s) { s.addEventListener("change", apply); });
  function reveal() {
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (target && target.tagName === "DETAILS") { target.hidden = false; target.open = true; target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", reveal);
  apply();
  reveal();
})();
"""
