// Live pages: an element with data-live-seconds="N" is fetched again every N seconds and its
// contents replaced with the new page's (the job page and the jobs list follow the scheduler
// without a reload). Skipped while the tab is hidden, a field inside it has the focus, or a
// field inside it was changed and not yet submitted (checked again when the answer arrives,
// so a change made while the page was being fetched is never overwritten).
(function () {
  "use strict";
  var region = document.querySelector("[data-live-seconds]");
  if (!region || !window.fetch || !window.DOMParser) return;
  var seconds = Math.max(1, parseInt(region.getAttribute("data-live-seconds"), 10) || 10);
  function changed(field) {
    if (field.tagName === "SELECT") {
      // With no option marked selected in the page, a list shows its first one.
      var marked = Array.prototype.some.call(field.options, function (option) {
        return option.defaultSelected;
      });
      return Array.prototype.some.call(field.options, function (option, index) {
        var initially = marked ? option.defaultSelected : index === 0 && !field.multiple;
        return option.selected !== initially;
      });
    }
    if (field.type === "checkbox" || field.type === "radio") {
      return field.checked !== field.defaultChecked;
    }
    return field.value !== field.defaultValue;
  }
  function busy() {
    var active = document.activeElement;
    if (document.hidden || region.contains(active) && active.matches("input, select, textarea")) {
      return true;
    }
    return Array.prototype.some.call(region.querySelectorAll("input, select, textarea"), changed);
  }
  function refresh() {
    if (busy()) return;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Live": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null || busy()) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(region.id);
        if (fresh) region.innerHTML = fresh.innerHTML;
      })
      .catch(function () { /* try again next time */ });
  }
  window.setInterval(refresh, seconds * 1000);
})();
