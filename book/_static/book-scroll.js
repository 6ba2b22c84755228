// A box that scrolls sideways says so. A printed output, a table and the calculator's
// tables keep their lines and columns (book.css); while one is wider than its box, the box
// is marked book-wide and the CSS writes the cue above it, as a figure's caption does.
// Jupyter Book adds every script in _static to every page.
(function () {
  "use strict";
  const BOXES = "div.cell_output pre, .pst-scrollable-table-container, .calc-scroll";

  function host(box) {
    return box.tagName === "PRE" ? box.closest("div.output") || box.parentElement : box;
  }

  function mark(box) {
    host(box).classList.toggle("book-wide", box.scrollWidth > box.clientWidth + 1);
  }

  const sizes = new ResizeObserver((entries) => entries.forEach((e) => mark(e.target)));
  const seen = new WeakSet();

  function watch(root) {
    const found = root.matches && root.matches(BOXES) ? [root] : [];
    for (const box of [...found, ...(root.querySelectorAll ? root.querySelectorAll(BOXES) : [])]) {
      if (seen.has(box)) continue;
      seen.add(box);
      mark(box);
      sizes.observe(box);
    }
  }

  function start() {
    watch(document);
    // The calculator writes its tables after the page has loaded.
    new MutationObserver((changes) => changes.forEach((c) => c.addedNodes.forEach(watch)))
      .observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
