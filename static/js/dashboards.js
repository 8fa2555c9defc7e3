/* Dashboards: draw the embedded figures with Plotly, then refresh them (and their tables)
   from the page's JSON endpoint every data-refresh seconds with Plotly.react. */
(function () {
  "use strict";
  const root = document.querySelector(".dashboard");
  const embedded = document.getElementById("dashboard-payload");
  if (!root || !embedded || typeof Plotly === "undefined") { return; }
  const status = document.querySelector(".dashboard-status");
  const config = { responsive: true, displaylogo: false };

  function draw(payload) {
    for (const chart of payload.charts) {
      const el = document.getElementById("plot-" + chart.id);
      if (el) { Plotly.react(el, chart.figure.data, chart.figure.layout, config); }
      fillTable(chart.id, chart.table);
    }
    for (const table of payload.tables) { fillTable(table.id, table); }
  }

  function fillTable(id, table) {
    const el = root.querySelector('table[data-table-id="' + id + '"]');
    if (!el) { return; }
    const body = document.createElement("tbody");
    for (const row of table.rows) {
      const tr = document.createElement("tr");
      row.forEach(function (cell, i) {
        const td = document.createElement(i === 0 ? "th" : "td");
        if (i === 0) { td.scope = "row"; }
        td.textContent = cell === null ? "" : String(cell);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
    el.replaceChild(body, el.tBodies[0]);
  }

  async function refresh() {
    const url = root.dataset.url + window.location.search;
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) { throw new Error("HTTP " + response.status); }
      const payload = await response.json();
      draw(payload);
      if (status) { status.textContent = "Updated " + new Date().toLocaleTimeString() + "."; }
    } catch (error) {
      if (status) { status.textContent = "Refresh failed (" + error.message + "); retrying."; }
    }
  }

  draw(JSON.parse(embedded.textContent));
  const seconds = Number(root.dataset.refresh) || 15;
  window.setInterval(refresh, seconds * 1000);
})();
