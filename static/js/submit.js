// The submit form's live estimate: on change, ask the server (a small JSON view) what would
// happen, and narrow the class and flavor choices to those of the chosen queue. Without this
// script the "Check" button does the same with a full page.
(function () {
  "use strict";
  var form = document.getElementById("submit-form");
  var panel = document.getElementById("estimate");
  var infoNode = document.getElementById("queue-info");
  if (!form || !panel || !infoNode) { return; }
  var info = JSON.parse(infoNode.textContent);
  var url = form.dataset.estimateUrl;
  var timer = null;
  var serial = 0;

  function narrow() {
    var queue = info[form.elements.queue.value];
    if (!queue) { return; }
    var classes = queue.classes.map(String);
    Array.prototype.forEach.call(form.elements.service_class.options, function (opt) {
      opt.hidden = opt.value !== "" && classes.length > 0 && classes.indexOf(opt.value) < 0;
    });
    var flavors = queue.flavors.map(String);
    ["flavor", "fallback_1", "fallback_2"].forEach(function (name) {
      Array.prototype.forEach.call(form.elements[name].options, function (opt) {
        opt.hidden = opt.value !== "" && flavors.indexOf(opt.value) < 0;
      });
    });
  }

  function text(tag, content, cls) {
    var node = document.createElement(tag);
    node.textContent = content;
    if (cls) { node.className = cls; }
    return node;
  }

  function show(data) {
    panel.replaceChildren();
    if (data.errors) {
      var list = document.createElement("ul");
      Object.keys(data.errors).forEach(function (field) {
        data.errors[field].forEach(function (e) {
          var label = form.elements[field] && form.elements[field].labels && form.elements[field].labels[0];
          list.appendChild(text("li", (label ? label.textContent.replace("*", "").trim() + ": " : "") + e.message));
        });
      });
      panel.appendChild(text("p", "No estimate yet:", "muted"));
      panel.appendChild(list);
      return;
    }
    var est = data.estimate;
    var p = document.createElement("p");
    p.className = "outcome outcome-" + est.outcome;
    p.appendChild(text("strong", est.outcome.charAt(0).toUpperCase() + est.outcome.slice(1)));
    p.appendChild(document.createTextNode(": " + est.summary));
    panel.appendChild(p);
    if (est.message) { panel.appendChild(text("p", est.message)); }
    var cost = est.rate_per_hour === null
      ? "Cost: no price is set for " + (est.flavor || "this GPU type") + "."
      : "Cost: " + est.rate_per_hour + " " + est.currency + " an hour" +
        (est.projected_cost === null
          ? "; give an estimated runtime for the projected cost."
          : "; " + est.projected_cost + " " + est.currency + " for the estimated runtime.");
    panel.appendChild(text("p", cost, "estimate-cost"));
    if (est.victims.length) {
      var ul = document.createElement("ul");
      est.victims.forEach(function (v) {
        var who = v.job_id === null ? "a job of another team" : v.name + " (#" + v.job_id + ", " + v.queue + ")";
        ul.appendChild(text("li", who + ": " + v.reason + (v.shrink_to ? ", shrunk to " + v.shrink_to + " workers" : "")));
      });
      panel.appendChild(ul);
    }
    var table = document.createElement("table");
    table.className = "compact";
    table.appendChild(text("caption", "Queue " + est.queue + ": quota, usage and what this job needs"));
    var head = document.createElement("tr");
    ["Flavor", "Nominal", "Used", "This job", "After"].forEach(function (h) {
      var th = text("th", h); th.scope = "col"; head.appendChild(th);
    });
    var thead = document.createElement("thead"); thead.appendChild(head); table.appendChild(thead);
    var body = document.createElement("tbody");
    est.quotas.forEach(function (q) {
      var tr = document.createElement("tr");
      var th = text("th", q.flavor); th.scope = "row"; tr.appendChild(th);
      [q.nominal, q.used, q.need, q.after + (q.within_nominal ? "" : " (above nominal)")].forEach(function (v) {
        tr.appendChild(text("td", String(v)));
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    panel.appendChild(table);
  }

  function refresh() {
    var params = new URLSearchParams(new FormData(form));
    params.delete("csrfmiddlewaretoken");
    // the long texts stay out of the URL: Check and Submit check them
    ["pod_template", "pod_template_file", "env", "volumes", "tolerations", "labels", "annotations"].forEach(function (name) {
      params.delete(name);
    });
    var mine = ++serial;
    fetch(url + "?" + params.toString(), { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) { if (mine === serial) { show(data); } })
      .catch(function () { /* the Check button still works */ });
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "queue") { narrow(); }
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  });
  narrow();
  if (form.elements.queue.value && form.elements.flavor.value) { refresh(); }
})();
