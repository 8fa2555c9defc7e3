// Forms marked data-confirm ask before they are sent (cancelling a job): the question is the
// attribute's text. Without this script the form is sent at once, as before.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    var question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();
