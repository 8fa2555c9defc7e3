// Live pages: an element with data-live-seconds="N" is fetched again every N seconds and its
// contents replaced with the new page's (the job page and the jobs list follow the scheduler
// without a reload). Skipped while the tab is hidden or a field inside it has the focus.
(function () {
  "use strict";
  var region = document.querySelector("[data-live-seconds]");
  if (!region || !window.fetch || !window.DOMParser) return;
  var seconds = Math.max(1, parseInt(region.getAttribute("data-live-seconds"), 10) || 10);
  function refresh() {
    if (document.hidden || region.contains(document.activeElement) &&
        document.activeElement.matches("input, select, textarea")) return;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Live": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(region.id);
        if (fresh) region.innerHTML = fresh.innerHTML;
      })
      .catch(function () { /* try again next time */ });
  }
  window.setInterval(refresh, seconds * 1000);
})();
