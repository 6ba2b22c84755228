// The book's computed prose in JupyterLab, as the book's site shows it.
//
// A markdown cell of one of the book's sections is rendered by the Jupyter server
// (book_machinery/lab_prose.py: the site's own MyST parser, with the values glued in
// the notebook's outputs as Lab holds them now, and the site build's numbers). Any other
// markdown, or a server without that extension, is rendered as Lab always renders it.
// When an output of the notebook changes (a cell run again), its prose is rendered
// again. Built by `make setup` with @jupyter/builder (book_machinery/lab.py says how
// Lab finds it).
"use strict";

const { INotebookTracker } = require("@jupyterlab/notebook");
const {
  IRenderMimeRegistry, RenderedMarkdown, renderHTML,
} = require("@jupyterlab/rendermime");
const { ServerConnection } = require("@jupyterlab/services");
const { URLExt } = require("@jupyterlab/coreutils");

const MARKDOWN = "text/markdown";
const QUIET_MS = 300;  // re-render once the outputs have stopped changing for this long

// What a notebook has glued, as Lab holds it: name -> MIME bundle (with its metadata).
function glueOf(panel) {
  const found = {};
  const cells = panel.content.model && panel.content.model.cells;
  for (let i = 0; cells && i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== "code" || !cell.outputs) continue;
    for (let j = 0; j < cell.outputs.length; j++) {
      const out = cell.outputs.get(j).toJSON();
      const record = out.metadata && out.metadata.scrapbook;
      if (!record || !out.data) continue;
      const prefix = record.mime_prefix || "";
      const bundle = { metadata: out.metadata };
      for (const [mime, value] of Object.entries(out.data)) {
        bundle[mime.startsWith(prefix) ? mime.slice(prefix.length) : mime] = value;
      }
      found[record.name] = bundle;
    }
  }
  return found;
}

// A short fingerprint of each glued value, to tell when one has changed.
function fingerprint(glue) {
  return Object.entries(glue).map(([name, b]) => {
    const v = b["text/plain"] || b["image/svg+xml"] || b["image/png"] || "";
    const text = Array.isArray(v) ? v.join("") : String(v);
    return `${name}=${text.length}:${text.slice(0, 80)}:${text.slice(-80)}`;
  }).sort().join("\n");
}

class Book {
  constructor(tracker) {
    this.tracker = tracker;
    this.settings = ServerConnection.makeSettings();
    this.outside = new Set();     // paths the server said are not the book's
    this.watched = new Map();     // panel -> {renderers, print, timer}
  }

  // The notebook panel a renderer draws for, from the path its resolver resolves in.
  panelFor(resolver) {
    for (let r = resolver; r; r = r._parent) {
      const path = r.path;
      if (typeof path === "string") {
        return this.outside.has(path) ? null
          : this.tracker.find((p) => p.context.path === path) || null;
      }
    }
    return null;
  }

  watch(panel, renderer) {
    let seen = this.watched.get(panel);
    if (!seen) {
      seen = { renderers: new Set(), print: fingerprint(glueOf(panel)), timer: 0 };
      this.watched.set(panel, seen);
      panel.context.model.contentChanged.connect(() => this.changed(panel));
      panel.disposed.connect(() => this.watched.delete(panel));
    }
    seen.renderers.add(renderer);
  }

  // An edit or an output: once they stop, render again if a glued value changed.
  changed(panel) {
    const seen = this.watched.get(panel);
    if (!seen) return;
    clearTimeout(seen.timer);
    seen.timer = setTimeout(() => {
      const print = fingerprint(glueOf(panel));
      if (print === seen.print) return;
      seen.print = print;
      for (const r of [...seen.renderers]) {
        if (r.isDisposed) seen.renderers.delete(r);
        else r.again();
      }
    }, QUIET_MS);
  }

  // The server's HTML for one cell of the panel's notebook, or null (not the book's).
  async html(panel, source) {
    const glue = glueOf(panel);
    const used = {};
    for (const name of Object.keys(glue)) if (source.includes(name)) used[name] = glue[name];
    const url = URLExt.join(this.settings.baseUrl, "book-prose", "render");
    const reply = await ServerConnection.makeRequest(url, {
      method: "POST",
      body: JSON.stringify({ path: panel.context.path, cells: [source], glue: used }),
    }, this.settings);
    if (reply.status === 404) {
      this.outside.add(panel.context.path);
      return null;
    }
    if (!reply.ok) throw new Error(`book-prose: ${reply.status} ${reply.statusText}`);
    return (await reply.json()).html[0];
  }
}

class BookMarkdown extends RenderedMarkdown {
  constructor(options, book) {
    super(options);
    this.book = book;
    this.addClass("book-prose");
  }

  async render(model) {
    const panel = this.book.panelFor(this.resolver);
    if (!panel) return super.render(model);
    this.model = model;
    this.book.watch(panel, this);
    let html;
    try {
      html = await this.book.html(panel, String(model.data[MARKDOWN]));
    } catch (err) {
      console.warn(err);
      html = null;
    }
    if (html === null) return super.render(model);
    this.node.dataset.bookProse = "rendered";
    return renderHTML({
      host: this.node, source: html, trusted: false, sanitizer: this.sanitizer,
      resolver: this.resolver, linkHandler: this.linkHandler,
      shouldTypeset: this.isAttached, latexTypesetter: this.latexTypesetter,
      translator: this.translator,
    });
  }

  // The same text again, with the notebook's glued values as they are now.
  again() {
    if (this.model) this.renderModel(this.model);
  }
}

const plugin = {
  id: "book-machinery-lab:prose",
  description: "A section's computed prose as the book's site shows it",
  autoStart: true,
  requires: [IRenderMimeRegistry, INotebookTracker],
  activate: (app, registry, tracker) => {
    const book = new Book(tracker);
    const rank = registry.getRank(MARKDOWN);
    registry.addFactory({
      safe: true,
      mimeTypes: [MARKDOWN],
      defaultRank: rank === undefined ? 60 : rank,
      createRenderer: (options) => new BookMarkdown(options, book),
    }, rank);
  },
};

module.exports = [plugin];
