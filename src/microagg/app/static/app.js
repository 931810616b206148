// microagg app: the page's script (served by the app as /static/app.js).
// A file larger than the upload limit is refused before it is sent: the limit comes from the
// page (#upload-limit's data-limit-bytes / data-limit-mb), the server refuses it anyway (413).
document.addEventListener("change", function (event) {
  var input = event.target;
  var line = document.getElementById("upload-limit");
  if (!input || input.type !== "file" || !input.files || !input.files.length || !line) {
    return;
  }
  var limit = Number(line.getAttribute("data-limit-bytes"));
  if (input.files[0].size > limit) {
    line.textContent = "the file is larger than the upload limit of " + line.getAttribute("data-limit-mb") +
      " MB (start the app with --max-upload-mb to change it)";
  }
}, true);

// The Explore tab: a click on a run's point of the risk-utility map (<g data-run="N">) or on a row's
// "open" button sends the run's id to the input its container names (data-pick-input); the server
// checks it is a finished run of the exploration and opens it in the Results tab.
document.addEventListener("click", function (event) {
  var target = event.target;
  var run = target && target.closest ? target.closest("[data-run]") : null;
  var box = run ? run.closest("[data-pick-input]") : null;
  if (!box || !window.Shiny || !Shiny.setInputValue) {
    return;
  }
  Shiny.setInputValue(box.getAttribute("data-pick-input"), run.getAttribute("data-run"), {priority: "event"});
});
