// Turns Jupyter Book's single-page HTML build into a printed book (run by book_machinery/pdf.py in
// headless Chromium, before page.pdf). Nothing here names a page of this book: it works from
// the structure every single-page build has.
//
//   - a title page, and a contents page built from the book's own table of contents;
//   - each document of the book (a chapter opening, a section, an appendix page) starts a new
//     page and names its pages (CSS `page`), and an @page rule per name puts that document's
//     number and title in the running header; page numbers are in book/_static/print.css;
//   - dropdowns are opened (folded code cells are already left out of the single-page build);
//   - solutions move to an appendix, "Solutions to the exercises", grouped by section, and
//     each exercise says where its solution is;
//   - links become references: an external link shows its address, a link to a section that
//     does not already name its number gets "(§ 1.2)";
//   - page numbers of the contents and of exercise/solution pointers: the first print writes
//     placeholders; pdf.py reads where every anchor landed from the PDF and calls
//     window.bookPrint.fillPages(...) before the second print.
(() => {
  "use strict";

  const article = document.querySelector("article.bd-article") || document.querySelector("article") || document.body;
  const PLACEHOLDER = "000";

  const text = (el) => (el ? el.textContent.replace(/\s+/g, " ").trim() : "");
  const headingOf = (section) => section && section.querySelector(":scope > h1, :scope > h2, :scope > h3, :scope > h4, :scope > h5, :scope > h6");
  const numberOf = (h) => (h && h.querySelector(".section-number") ? text(h.querySelector(".section-number")).replace(/\.$/, "") : "");
  const titleOf = (h) => {
    if (!h) return "";
    const copy = h.cloneNode(true);
    copy.querySelectorAll(".headerlink, .section-number").forEach((a) => a.remove());
    return text(copy);
  };
  const cssString = (s) => '"' + s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/[\r\n]+/g, " ") + '"';
  const el = (tag, attrs = {}, children = []) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  };
  // An in-page target for a link: "#x", or "intro.html#x" when that is this page.
  const targetId = (a) => {
    const href = a.getAttribute("href") || "";
    if (!href.includes("#")) return null;
    let url;
    try { url = new URL(href, location.href); } catch (e) { return null; }
    if (url.origin !== location.origin || url.pathname !== location.pathname) return null;
    return decodeURIComponent(url.hash.slice(1));
  };

  // The documents of the book in reading order: the root, then one per toctree entry.
  function documents() {
    const docs = [];
    const root = article.querySelector("section");
    if (root) docs.push({ name: "", section: root, anchor: root.id });
    article.querySelectorAll('span[id^="document-"]').forEach((span) => {
      const section = span.nextElementSibling;
      if (section && section.tagName === "SECTION") {
        docs.push({ name: span.id.slice("document-".length), section, anchor: span.id });
      }
    });
    for (const d of docs) {
      // The empty marker a single-page build puts before each document (section ids repeat
      // between documents, the markers' do not) moves into the section: a box of its own
      // between two sections would belong to the enclosing document's named page and print
      // as a blank page.
      const marker = document.getElementById(d.anchor);
      if (marker && marker !== d.section) {
        marker.style.display = "block";
        marker.style.height = "0";
        d.section.prepend(marker);
      }
      const h = headingOf(d.section);
      if (h) h.classList.add("print-document-title");
      d.heading = h;
      d.number = numberOf(h);
      d.title = titleOf(h);
      d.level = h ? Number(h.tagName.slice(1)) : 1;
    }
    return docs;
  }

  // The book's table of contents as the theme renders it (part captions included), read from
  // the page's navigation; if a theme has none, from the documents' own headings.
  function contentsEntries(docs) {
    const entries = [];
    const nav = document.querySelector("#pst-page-toc-nav, nav.bd-toc-nav, .bd-sidebar-secondary nav");
    if (nav) {
      for (const node of nav.children) {
        if (node.matches("p.caption, .caption")) entries.push({ kind: "part", title: text(node) });
        else if (node.tagName === "UL") {
          const walk = (ul, depth) => {
            for (const li of ul.querySelectorAll(":scope > li")) {
              const a = li.querySelector(":scope > a");
              if (a && depth <= 2) {
                const id = targetId(a);
                const doc = docs.find((d) => d.anchor === id || d.section.id === id);
                if (doc) entries.push({ kind: "doc", depth, doc });
              }
              const sub = li.querySelector(":scope > ul");
              if (sub) walk(sub, depth + 1);
            }
          };
          walk(node, 1);
        }
      }
    }
    if (!entries.some((e) => e.kind === "doc")) {
      entries.length = 0;
      const top = Math.min(...docs.slice(1).map((d) => d.level));
      for (const d of docs.slice(1)) entries.push({ kind: "doc", depth: d.level - top + 1, doc: d });
    }
    return entries;
  }

  function pageRef(targetAnchor, prefix) {
    // A link whose page number is filled in after the first print.
    return el("a", { class: "print-page-ref", href: "#" + targetAnchor, "data-target": targetAnchor },
      [prefix, el("span", { class: "print-page-number", text: PLACEHOLDER })]);
  }

  function prepare(opts) {
    const info = {};
    document.documentElement.classList.add("print-book");
    // Chrome of the site that has no place in a book.
    document.querySelectorAll("#jb-print-docs-body, .bd-header-article, .prev-next-area, .headerlink, button.copybtn, button.toggle-button")
      .forEach((e) => e.remove());

    const docs = documents();
    const root = docs[0];
    info.documents = docs.map((d) => ({ name: d.name, anchor: d.anchor, number: d.number, title: d.title }));

    // Headings print with white-space: pre-wrap (print.css), so their text must hold no line breaks.
    for (const h of article.querySelectorAll("h1, h2, h3, h4, h5, h6")) {
      const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);
      const nodes = [];
      for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
      nodes.forEach((n, i) => {
        let v = n.nodeValue.replace(/\s+/g, " ");
        if (i === 0) v = v.trimStart();
        if (i === nodes.length - 1) v = v.trimEnd();
        n.nodeValue = v;
      });
    }

    // Dropdowns open; togglebutton's hidden content shown. (Folded code cells never reach this
    // page: book/_ext/book_print.py leaves them out of the single-page build.)
    document.querySelectorAll("details").forEach((d) => { d.open = true; });
    document.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));

    // Pictures at the size they were drawn, never wider than the text: an SVG figure carries its
    // own width (in points, and the same in its style); a PNG is sized by its pixels over the dots
    // per inch stored in it. A figure drawn 7 inches wide with 9-point labels prints with 9-point
    // labels (and a PNG at no fewer dots per inch than it was drawn with).
    for (const img of article.querySelectorAll("img")) {
      const dpi = (opts.imageDpi || {})[img.getAttribute("src")];
      if (dpi && img.naturalWidth) {
        img.style.width = (img.naturalWidth / dpi).toFixed(3) + "in";
        img.style.height = "auto";
      }
    }

    // Solutions to an appendix, grouped by the document they belong to.
    const solutions = [...article.querySelectorAll("div.solution, .solution.admonition")].filter((s, i, all) => !all.some((o) => o !== s && o.contains(s)));
    info.solutions = solutions.length;
    let solutionsSection = null;
    if (solutions.length) {
      solutionsSection = el("section", { id: "print-solutions", class: "print-solutions" },
        [el("h2", { text: opts.solutionsTitle || "Solutions to the exercises" })]);
      let current = null;
      for (const sol of solutions) {
        const owner = [...docs].reverse().find((d) => d.section.contains(sol));
        if (owner !== current) {
          current = owner;
          const label = [owner.number, owner.title].filter(Boolean).join(" ");
          solutionsSection.append(el("h3", { class: "print-solutions-group" },
            [el("a", { href: "#" + owner.anchor, text: label })]));
        }
        const title = sol.querySelector(".admonition-title");
        const exercise = title && title.querySelector("a") ? targetId(title.querySelector("a")) : null;
        if (exercise && document.getElementById(exercise)) {
          const ex = document.getElementById(exercise);
          if (!sol.id) sol.id = "print-solution-" + exercise;
          const pointer = el("p", { class: "print-solution-pointer" }, [pageRef(sol.id, "Solution on page ")]);
          ex.append(pointer);
          title.append(el("span", { class: "print-exercise-pointer" }, [" (", pageRef(exercise, "page "), ")"]));
        }
        sol.classList.remove("dropdown");
        solutionsSection.append(sol);
      }
      // After the last numbered chapter: the end of the main matter. Without numbers, at the end.
      const numbered = docs.filter((d) => d.number && d !== root);
      const topLevel = numbered.length ? Math.min(...numbered.map((d) => d.level)) : null;
      const lastChapter = numbered.filter((d) => d.level === topLevel).pop();
      if (lastChapter) lastChapter.section.after(solutionsSection);
      else (root ? root.section : article).append(solutionsSection);
      const sh = solutionsSection.querySelector("h2");
      sh.classList.add("print-document-title");
      docs.push({ name: "print-solutions", section: solutionsSection, anchor: solutionsSection.id, number: "", title: text(sh), heading: sh, level: 2 });
      docs.sort((a, b) => (a.section === b.section ? 0 : a.section.compareDocumentPosition(b.section) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
    }

    // Links as references.
    for (const a of article.querySelectorAll("a.reference.external, a[href^='http']")) {
      const href = a.getAttribute("href");
      if (!href || a.closest(".print-url")) continue;
      const shown = text(a).replace(/^https?:\/\//, "").replace(/\/$/, "");
      const bare = href.replace(/^https?:\/\//, "").replace(/\/$/, "");
      if (shown && !bare.startsWith(shown) && !shown.startsWith(bare)) {
        a.after(el("span", { class: "print-url", text: " (" + href + ")" }));
      }
    }
    for (const a of article.querySelectorAll("a.reference.internal")) {
      if (a.querySelector(".std-term, .std-numref, .std-ref.eq, .std-cite") || a.closest(".admonition-title, .print-contents, .citation")) continue;
      const id = targetId(a);
      if (!id) continue;
      let target = document.getElementById(id);
      if (!target) continue;
      // A document's marker, or a label's empty anchor inside a section, stands for that section.
      if (target.tagName !== "SECTION" && !text(target)) target = target.closest("section");
      if (!target || target.tagName !== "SECTION") continue;
      const number = numberOf(headingOf(target));
      if (number && !text(a).includes(number)) a.after(el("span", { class: "print-section-ref", text: " (§\u2009" + number + ")" }));
    }

    // Title page and contents.
    const title = opts.title || (root ? root.title : document.title);
    const titlePage = el("section", { id: "print-title-page", class: "print-title-page" }, [
      el("div", { class: "print-book-title", text: title }),
      ...(opts.author ? [el("p", { class: "print-author", text: opts.author })] : []),
      ...(opts.edition ? [el("p", { class: "print-edition", text: opts.edition })] : []),
    ]);
    const list = el("div", { class: "print-contents-list" });
    const entries = contentsEntries(docs);
    if (solutionsSection) {
      // The solutions open the back matter: before the first document printed after them.
      const solutionsDoc = docs.find((d) => d.section === solutionsSection);
      const after = entries.findIndex((e) => e.kind === "doc" && (solutionsSection.compareDocumentPosition(e.doc.section) & Node.DOCUMENT_POSITION_FOLLOWING));
      entries.splice(after < 0 ? entries.length : after, 0, { kind: "doc", depth: 1, doc: solutionsDoc });
    }
    for (const e of entries) {
      if (e.kind === "part") { list.append(el("p", { class: "print-contents-part", text: e.title })); continue; }
      list.append(el("p", { class: `print-contents-entry depth-${e.depth}` }, [
        el("a", { href: "#" + e.doc.anchor }, [
          el("span", { class: "print-contents-number", text: e.doc.number }),
          el("span", { class: "print-contents-title", text: e.doc.title }),
          el("span", { class: "print-page-number", "data-target": e.doc.anchor, text: PLACEHOLDER }),
        ]),
      ]));
    }
    const contents = el("section", { id: "print-contents", class: "print-contents" },
      [el("h2", { text: opts.contentsTitle || "Contents" }), list]);
    article.prepend(titlePage, contents);

    // Named pages: each document starts a page and carries its title in the running header.
    const rules = [];
    const bookTitle = cssString(title);
    docs.forEach((d, i) => {
      const name = "doc" + i;
      d.section.style.page = name;
      d.section.classList.add("print-document");
      const label = d === root ? title : [d.number, d.title].filter(Boolean).join("\u2003");
      rules.push(`@page ${name} { @top-left { content: ${cssString(label)}; } @top-right { content: ${d === root ? "none" : bookTitle}; } }`);
    });
    // The title page is the first page: no header, no number.
    contents.style.page = "contents";
    rules.push("@page :first { @top-left { content: none; } @top-right { content: none; } @bottom-center { content: none; } }");
    rules.push(`@page contents { @top-left { content: none; } @top-right { content: none; } }`);
    document.head.append(el("style", { id: "print-running-headers", text: rules.join("\n") }));

    info.pageTargets = [...new Set([...document.querySelectorAll("[data-target]")].map((e) => e.dataset.target))];
    info.figures = article.querySelectorAll("figure img").length;
    info.exercises = article.querySelectorAll("div.exercise").length;
    return info;
  }

  // Replace every placeholder page number by the page its target landed on.
  function fillPages(pages) {
    const missing = [];
    for (const e of document.querySelectorAll("[data-target]")) {
      const span = e.classList.contains("print-page-number") ? e : e.querySelector(".print-page-number");
      const page = pages[e.dataset.target];
      if (page === undefined) missing.push(e.dataset.target);
      else span.textContent = String(page);
    }
    return missing;
  }

  // Wait for what the print needs: MathJax done, fonts loaded, every image decoded.
  async function ready() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
    await document.fonts.ready;
    await Promise.all([...document.images].map((img) => (img.complete ? Promise.resolve() : img.decode().catch(() => {}))));
    const untypeset = [...document.querySelectorAll("article .math")].filter((m) => !m.querySelector("mjx-container")).length;
    return { untypeset, math: document.querySelectorAll("article .math").length };
  }

  // A draft print only finds where things land: pictures keep their boxes but are not drawn.
  function draft(on) {
    const old = document.getElementById("print-draft");
    if (old) old.remove();
    if (on) document.head.append(el("style", { id: "print-draft", text: "img { visibility: hidden !important; }" }));
  }

  window.bookPrint = { prepare, fillPages, ready, draft };
})();
