//! The page's style and script, inline: no font, image or stylesheet from
//! anywhere else. Every rule is scoped to `.tally-report`, so the page
//! drops into a notebook's output cell without restyling it.

/// The style: Okabe-Ito colours (colour-blind safe) for the categories and
/// idle causes, light and dark by the reader's `prefers-color-scheme`.
pub const STYLE: &str = r#"
.tally-report{--fg:#1b1b1b;--bg:#ffffff;--muted:#5f5f5f;--line:#d0d0d0;--lane:#f1f1f1;--head:#f6f6f6;
--compute:#0072B2;--communication:#D55E00;--memory:#009E73;--other:#CC79A7;
--launch_queued:#E69F00;--sync_wait:#56B4E9;--unknown:#999999;--host_bound:#F0E442;
--overlapped:#F4B183;--run-a:#56B4E9;--run-b:#E69F00;
color:var(--fg);background:var(--bg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
max-width:1200px;margin:0 auto;padding:12px 18px}
@media (prefers-color-scheme: dark){.tally-report{--fg:#e6e6e6;--bg:#161616;--muted:#a8a8a8;--line:#3a3a3a;
--lane:#242424;--head:#202020;--overlapped:#8a4a22;--unknown:#7a7a7a}}
.tally-report h1{font-size:1.5em;margin:.2em 0}.tally-report h2{font-size:1.25em;margin:1.4em 0 .3em;
border-bottom:1px solid var(--line)}.tally-report h3{font-size:1.05em;margin:1.1em 0 .3em}
.tally-report .muted,.tally-report caption{color:var(--muted)}
.tally-report .headline{display:flex;flex-wrap:wrap;gap:10px;margin:.5em 0}
.tally-report .figure{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:150px}
.tally-report .figure .value{font-size:1.35em;font-weight:600}.tally-report .figure .label{color:var(--muted);font-size:.9em}
.tally-report .chart-and-table{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:14px;align-items:start}
@media (max-width:900px){.tally-report .chart-and-table{grid-template-columns:1fr}}
.tally-report svg.tally-chart{width:100%;height:auto;display:block}
.tally-report svg.bars,.tally-report svg.columns{max-width:760px}
.tally-report .lane-bg{fill:var(--lane)}.tally-report .lane-label{fill:var(--fg);font-size:12px;text-anchor:end}
.tally-report .tick-label{fill:var(--muted);font-size:11px;text-anchor:middle}
.tally-report .bar-note{fill:var(--fg);font-size:12px}
.tally-report .axis,.tally-report .tick{stroke:var(--muted);stroke-width:1}
.tally-report .c-compute{fill:var(--compute);background:var(--compute)}
.tally-report .c-communication{fill:var(--communication);background:var(--communication)}
.tally-report .c-memory{fill:var(--memory);background:var(--memory)}
.tally-report .c-other{fill:var(--other);background:var(--other)}
.tally-report .c-launch_queued{fill:var(--launch_queued);background:var(--launch_queued)}
.tally-report .c-sync_wait{fill:var(--sync_wait);background:var(--sync_wait)}
.tally-report .c-unknown{fill:var(--unknown);background:var(--unknown)}
.tally-report .c-host_bound{fill:var(--host_bound);background:var(--host_bound)}
.tally-report .c-overlapped{fill:var(--overlapped);background:var(--overlapped)}
.tally-report .c-run-a{fill:var(--run-a);background:var(--run-a)}
.tally-report .c-run-b{fill:var(--run-b);background:var(--run-b)}
.tally-report .legend{display:flex;flex-wrap:wrap;gap:12px;font-size:.9em;margin:.2em 0 .5em}
.tally-report .swatch{display:inline-block;width:.9em;height:.9em;border-radius:2px;vertical-align:-.1em;margin-right:4px}
.tally-report .table-scroll{overflow-x:auto;max-width:100%}
.tally-report table.tally-table{border-collapse:collapse;margin:.3em 0 .8em;font-size:.92em;width:100%}
.tally-report table.tally-table caption{text-align:left;font-size:.9em;padding-bottom:2px}
.tally-report table.tally-table th,.tally-report table.tally-table td{border-bottom:1px solid var(--line);
padding:3px 8px;text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.tally-report table.tally-table th[scope=row]{white-space:normal}
.tally-report table.tally-table th[scope=row]{text-align:left;font-weight:normal;overflow-wrap:anywhere}
.tally-report table.tally-table thead th{background:var(--head);text-align:right}
.tally-report table.tally-table thead th:first-child{text-align:left}
.tally-report table.sortable thead th{cursor:pointer;user-select:none}
.tally-report table.sortable thead th[aria-sort=ascending]::after{content:" \25B2"}
.tally-report table.sortable thead th[aria-sort=descending]::after{content:" \25BC"}
.tally-report nav a{margin-right:10px;color:inherit}
.tally-report details{margin:.4em 0}
"#;

/// The script: a click on a sortable table's header sorts its rows by
/// that column (by each cell's `data-value` when it has one, as a number
/// when both are, else by text). Nothing else runs.
pub const SCRIPT: &str = r#"
(function(){var root=document.currentScript&&document.currentScript.parentNode;if(!root)return;
function key(row,i){var c=row.children[i];if(!c)return"";var v=c.getAttribute("data-value");return v===null?c.textContent:v;}
root.querySelectorAll("table.sortable").forEach(function(table){
table.querySelectorAll("thead th").forEach(function(th,i){th.addEventListener("click",function(){
var down=th.getAttribute("aria-sort")!=="descending";
table.querySelectorAll("thead th").forEach(function(o){o.removeAttribute("aria-sort");});
th.setAttribute("aria-sort",down?"descending":"ascending");
var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,b){var x=key(a,i),y=key(b,i),nx=Number(x),ny=Number(y);
var r=(x!==""&&y!==""&&!isNaN(nx)&&!isNaN(ny))?nx-ny:String(x).localeCompare(String(y));return down?-r:r;});
rows.forEach(function(r){body.appendChild(r);});});});});})();
"#;
