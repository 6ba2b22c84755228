// The landing page's install command names the library's wheel by its file name; here it
// becomes a requirement with the wheel's full address on this site (http or file://), so
// `pip install` fetches it and a section's notebook is the one thing to download.
document.addEventListener("DOMContentLoaded", () => {
  const link = document.querySelector('.book-downloads a.book-download[href$=".whl"]');
  const pre = document.querySelector(".book-downloads .book-install pre");
  if (!link || !pre) return;
  const wheel = link.textContent.trim();
  const project = wheel.split("-")[0].replace(/_/g, "-");
  pre.textContent = pre.textContent.replace(`"${wheel}[torch]"`, `"${project}[torch] @ ${link.href}"`);
});
