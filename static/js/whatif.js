/* What-if on the quota editors (a queue's, a cohort's): post the form's quotas (and the
   optional node change) to /api/v1/what-if/, poll the run's status URL, then show both runs
   side by side. */
(function () {
  "use strict";
  const root = document.getElementById("what-if");
  const form = document.getElementById("queue-form") || document.getElementById("cohort-form");
  const cohort = root.dataset.cohort;
  if (!root || !form) { return; }
  const flavorNames = JSON.parse(document.getElementById("what-if-flavor-names").textContent);
  const button = document.getElementById("what-if-run");
  const bar = document.getElementById("what-if-progress");
  const status = document.getElementById("what-if-status");
  const result = document.getElementById("what-if-result");
  const config = { responsive: true, displaylogo: false };

  function value(row, name) {
    const el = row.querySelector('[name$="-' + name + '"]');
    return el ? el.value.trim() : "";
  }

  function limit(text) { return text === "" ? null : Number(text); }

  function quotas() {
    const out = [];
    for (const row of form.querySelectorAll("#quotas-rows tbody tr")) {
      const flavor = flavorNames[value(row, "flavor")];
      if (!flavor) { continue; }
      const deleted = row.querySelector('[name$="-DELETE"]');
      const gone = deleted && deleted.checked;
      out.push({
        ...(cohort ? { cohort: cohort } : { queue: Number(root.dataset.queue) }),
        flavor: flavor,
        nominal: gone ? 0 : limit(value(row, "nominal")),
        borrowing_limit: gone ? null : limit(value(row, "borrowing_limit")),
        lending_limit: gone ? null : limit(value(row, "lending_limit")),
      });
    }
    return out;
  }

  function body() {
    const add = Number(document.getElementById("what-if-add").value || 0);
    const nodes = add === 0 ? [] : [{
      cluster: Number(document.getElementById("what-if-cluster").value),
      flavor: document.getElementById("what-if-node-flavor").value,
      add: add,
    }];
    const days = Number(document.getElementById("what-if-days").value);
    const key = cohort ? "cohort_quotas" : "quotas";
    return { days: days, [key]: quotas(), nodes: nodes };
  }

  function say(text) { status.textContent = text; }

  function errors(payload, prefix) {
    const out = [];
    if (Array.isArray(payload) && payload.every(function (item) { return typeof item === "string"; })) {
      out.push(prefix + ": " + payload.join(" "));
    } else if (Array.isArray(payload)) {
      payload.forEach(function (item, i) { out.push(...errors(item, prefix + "[" + i + "]")); });
    } else if (payload && typeof payload === "object") {
      for (const [key, inner] of Object.entries(payload)) {
        out.push(...errors(inner, prefix ? prefix + "." + key : key));
      }
    } else if (payload) {
      out.push(prefix + ": " + payload);
    }
    return out;
  }

  async function start() {
    button.disabled = true;
    result.hidden = true;
    bar.hidden = false;
    bar.value = 0;
    say("Asking for a replay…");
    const token = form.querySelector('[name="csrfmiddlewaretoken"]').value;
    try {
      const response = await fetch(root.dataset.url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": token },
        body: JSON.stringify(body()),
      });
      const payload = await response.json();
      if (response.status !== 202) {
        bar.hidden = true;
        button.disabled = false;
        say("Cannot replay: " + errors(payload, "").join("; "));
        return;
      }
      poll(payload.status_url);
    } catch (error) {
      bar.hidden = true;
      button.disabled = false;
      say("The replay could not be asked for (" + error.message + ").");
    }
  }

  async function poll(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    const run = await response.json();
    bar.value = run.progress;
    bar.textContent = Math.round(run.progress * 100) + " %";
    if (run.state === "done") {
      bar.hidden = true;
      button.disabled = false;
      show(run.result);
      return;
    }
    if (run.state === "failed") {
      bar.hidden = true;
      button.disabled = false;
      say("The replay failed: " + run.message);
      return;
    }
    say(run.state === "queued" ? "Queued: waiting for a worker…"
      : "Replaying… " + Math.round(run.progress * 100) + " %");
    window.setTimeout(function () { poll(url); }, 1000);
  }

  const hours = function (s) { return (s / 3600).toFixed(1); };
  const plain = function (v) { return String(v); };
  const COLUMNS = [
    ["jobs", plain, 0], ["mean_wait_s", hours, 1], ["p95_wait_s", hours, 1],
    ["gpu_hours", plain, 0], ["borrowed_gpu_hours", plain, 0], ["preemptions", plain, 1],
    ["waited_over_a_day", plain, 1],
  ];

  function fill(table, rows) {
    const tbody = document.createElement("tbody");
    for (const row of rows) {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = row.name;
      tr.appendChild(th);
      for (const [key, format, higherIsWorse] of COLUMNS) {
        const td = document.createElement("td");
        const before = row.today[key];
        const after = row.proposed[key];
        td.dataset.key = key;
        td.textContent = before === after ? format(before) : format(before) + " → " + format(after);
        if (higherIsWorse && after !== before) { td.className = after > before ? "worse" : "better"; }
        tr.appendChild(td);
      }
      tbody.appendChild(tr);
    }
    table.replaceChild(tbody, table.tBodies[0]);
  }

  function show(data) {
    fill(document.getElementById("what-if-queues"), data.queues);
    fill(document.getElementById("what-if-cohorts"), data.cohorts);
    result.hidden = false;
    const span = data.days === 1 ? "day" : data.days + " days";
    say("Replayed " + data.jobs + " jobs submitted in the last " + span + ", twice. Nothing was saved.");
    if (typeof Plotly !== "undefined") {
      for (const chart of data.charts) {
        const el = document.getElementById("plot-" + chart.id);
        if (el) { Plotly.react(el, chart.figure.data, chart.figure.layout, config); }
      }
    }
  }

  button.addEventListener("click", start);
})();
