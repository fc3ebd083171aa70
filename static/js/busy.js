/*
 * A form that sends a file says, once sent, that it is at work: the file goes up and is then checked before
 * its job starts (a few seconds for a large one), while the page would otherwise show nothing. The form
 * names what it is doing in `data-busy`; its button is disabled so that a second press does not send the
 * file again. The page the server answers replaces this one (the job's page, or the form with its errors).
 * Loaded by the pages that hold such a form (a collection's, a pool's crowd labels, a click log's upload).
 */
(function () {
  "use strict";

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var text = form.getAttribute("data-busy");
    if (!text || event.defaultPrevented) {
      return;
    }
    var buttons = form.querySelectorAll('button[type="submit"], input[type="submit"]');
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].disabled = true;
    }
    var note = form.querySelector(".busy");
    if (!note) {
      note = document.createElement("p");
      note.className = "busy";
      note.setAttribute("role", "status");
      form.appendChild(note);
    }
    note.textContent = text;
  });
})();
