// Search results quote each page's prose (sphinx_site.py writes it to book-search-text.js),
// the same over file:// and http: Sphinx's own quoting fetches every page, which a browser
// refuses over file://, and quotes the first text of a page, often a contents list.
(() => {
  const words = (new URLSearchParams(window.location.search).get("q") || "")
    .toLowerCase().split(/\s+/).filter((w) => w.length > 1);
  const prose = window.BOOK_SEARCH_TEXT || {};
  const root = document.documentElement.dataset.content_root || "";

  const quote = (text) => {
    const lower = text.toLowerCase();
    const found = (w) => lower.indexOf(w) > -1 ? lower.indexOf(w) : lower.indexOf(w.slice(0, Math.max(4, w.length - 2)));
    const at = words.map(found).filter((i) => i > -1).sort((a, b) => a - b)[0];
    if (at === undefined) return null;
    let start = Math.max(0, at - 100);
    if (start) start = text.indexOf(" ", start) + 1 || start;  // from a word's start
    return (start ? "..." : "") + text.substr(start, 240).trim() + (start + 240 < text.length ? "..." : "");
  };

  const summarise = (item) => {
    const link = item.querySelector("a");
    if (!link || item.querySelector("p.context")) return;
    const url = new URL(link.getAttribute("href"), document.baseURI);
    const page = decodeURIComponent(url.pathname).replace(/\.html$/, "");
    const doc = Object.keys(prose).find((d) => page.endsWith("/" + d) || page === d);
    if (!doc) return;
    const anchor = url.hash.slice(1);
    const sections = prose[doc];
    const own = sections.filter(([id]) => anchor && id === anchor).map(([, t]) => t);
    const text = quote(own.join(" ")) || quote(sections.map(([, t]) => t).join(" "));
    if (!text) return;
    const p = document.createElement("p");
    p.classList.add("context");
    p.textContent = text;
    item.appendChild(p);
    if (typeof SPHINX_HIGHLIGHT_ENABLED !== "undefined" && SPHINX_HIGHLIGHT_ENABLED)
      words.forEach((w) => _highlightText(p, w, "highlighted"));
  };

  document.addEventListener("DOMContentLoaded", () => {
    const results = document.getElementById("search-results");
    if (!results) return;
    new MutationObserver((changes) => changes.forEach((change) =>
      change.addedNodes.forEach((node) => {
        if (node.nodeName === "LI") summarise(node);
        else if (node.querySelectorAll) node.querySelectorAll("li").forEach(summarise);
      }))).observe(results, { childList: true, subtree: true });
  });
})();
