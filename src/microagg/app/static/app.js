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
