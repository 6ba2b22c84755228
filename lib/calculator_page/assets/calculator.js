// The calculator's form on the page "Do the arithmetic for your own model".
//
// The form builds a command line (`report CONFIG --chip ...`, `train CONFIG ...` or
// `plan CONFIG --chip NAME --chips N ...`), a worker runs it
// through the library's own calculator under Pyodide (calculator-worker.js), and this
// script lays out what the command line printed: its text report as tables, and two
// pictures drawn from its --json numbers. No number is computed here; the pictures'
// scales and ticks are the only arithmetic, and they are drawing.
//
// The report the build computed for the example config is shown at once, and is what
// the print edition keeps. The runtime is fetched only when the form comes into view
// (or is used), from the site itself: nothing leaves the site.
(function () {
  "use strict";

  const SCRIPT = document.currentScript && document.currentScript.src;
  const SVG = "http://www.w3.org/2000/svg";
  const INPUT = "/home/pyodide/input";
  const US = "en-US";

  function el(tag, attrs, ...children) {
    const svg = ["svg", "g", "rect", "line", "text", "title", "path"].includes(tag);
    const node = svg ? document.createElementNS(SVG, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) {
        node.append(typeof child === "string" ? document.createTextNode(child) : child);
      }
    }
    return node;
  }

  // ---------------------------------------------------------------- the command line

  function shellWord(word) {
    return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
  }

  function fieldValue(field, form) {
    if (field.dataset.join) {
      return field.dataset.join.split(/\s+/)
        .map((id) => form.querySelector(`#${id}`).value.trim()).join(",");
    }
    return field.value.trim();
  }

  function command(form) {
    return form.querySelector("[name=calc-command]:checked").value;
  }

  // The form's modes: its command, and a plan's goal ("plan-training", "plan-serving").
  function modes(form) {
    const mode = command(form);
    if (mode !== "plan") return [mode];
    return [mode, `plan-${form.querySelector("[name=calc-goal]:checked").value}`];
  }

  // Whether an element of the form belongs to one of these modes: every element around
  // it (and itself) that names modes in data-calc-mode names one of them.
  function mine(node, current) {
    return node.dataset.calcMode.split(/\s+/).some((m) => current.includes(m));
  }

  function applies(node, current) {
    for (let n = node.closest("[data-calc-mode]"); n;
      n = n.parentElement && n.parentElement.closest("[data-calc-mode]")) {
      if (!mine(n, current)) return false;
    }
    return true;
  }

  // Every enabled field with data-flag adds "FLAG VALUE" (a radio only when checked, a
  // checkbox "FLAG" alone when checked); a field of another mode's adds nothing.
  function flagArguments(form) {
    const args = [];
    const current = modes(form);
    for (const field of form.querySelectorAll("[data-flag]")) {
      if (field.matches(":disabled") || !applies(field, current)) continue;
      if ((field.type === "radio" || field.type === "checkbox") && !field.checked) continue;
      if (field.type === "checkbox") {
        args.push(field.dataset.flag);
        continue;
      }
      const value = fieldValue(field, form);
      if (value !== "") args.push(field.dataset.flag, value);
    }
    return args;
  }

  // Show the fields of the modes asked for; hide (and disable) the others'.
  function showMode(form) {
    const current = modes(form);
    for (const part of form.querySelectorAll("[data-calc-mode]")) {
      const shown = mine(part, current);
      part.hidden = !shown;
      if (part.tagName === "FIELDSET") part.disabled = !shown;
    }
  }

  // ---------------------------------------------------------------- reading the report

  const DASHES = /^\s*-+(\s+-+)*\s*$/;

  // The text report is blocks of lines with a blank line between them: a table is a
  // title, perhaps indented notes ("  - ..." or "  links: ..."), a header and a row of
  // dashes whose runs give each column's exact span.
  function parseReport(text) {
    const blocks = text.replace(/\s+$/, "").split(/\n[ \t]*\n/).map((b) => b.split("\n"));
    return blocks.map((lines) => {
      // notes between the title and the header: indented lines, "- " items or not (a
      // split's links and schedule)
      const dashes = lines.findIndex((line, i) => i >= 2 && DASHES.test(line)
        && lines.slice(1, i - 1).every((l) => /^\s+\S/.test(l)));
      if (dashes >= 2) {
        const before = lines.slice(1, dashes - 1).map((l) => l.replace(/^\s+(- )?/, ""));
        lines = [lines[0], ...lines.slice(dashes - 1)];
        const spans = [...lines[2].matchAll(/-+/g)].map((m) => [m.index, m.index + m[0].length]);
        const cells = (line) => spans.map(([a, b]) => line.slice(a, b).trim());
        // A line with writing between the columns is a note under the table, not a row.
        const gaps = spans.slice(1).map(([a], i) => [spans[i][1], a]);
        const isRow = (line) => gaps.every(([a, b]) => !line.slice(a, b).trim())
          && !line.slice(spans[spans.length - 1][1]).trim();
        const rows = lines.slice(3);
        const cut = rows.findIndex((line) => !isRow(line));
        return { kind: "table", title: lines[0].trim(), before, header: cells(lines[1]),
                 rows: (cut < 0 ? rows : rows.slice(0, cut)).map(cells),
                 notes: cut < 0 ? [] : rows.slice(cut).map((l) => l.trim()) };
      }
      if (lines.length >= 2 && lines.slice(1).every((l) => /^\s+- /.test(l))) {
        return { kind: "list", title: lines[0].trim(),
                 items: lines.slice(1).map((l) => l.replace(/^\s+- /, "")) };
      }
      const items = [];
      for (const line of lines) {
        if (/^\s/.test(line) && items.length) items[items.length - 1].push(line.trim());
        else items.push([line.trim()]);
      }
      return { kind: "lines", items };
    });
  }

  // A web address in the report's text becomes a link (its text unchanged).
  function linked(text) {
    return text.split(/(https:\/\/\S+)/).map((part, i) => (i % 2
      ? el("a", { href: part, rel: "noopener", text: part }) : part));
  }

  // A line that says the model cannot run here is marked, so it is read first.
  const WARNING = /do not fit|cannot run|none printed|^Chips for the weights|^No plan/;

  // A ranked plan ("#1  tp 8 x pp 1 ...", then its indented lines): its rank and shape
  // as a heading, each of its lines below it.
  const PLAN = /^(#\d+)\s{2,}(\S.*)$/;

  function renderPlan(item, warn) {
    const [, rank, shape] = item[0].match(PLAN);
    return el("li", { class: ["calc-plan", warn].filter(Boolean).join(" ") },
      el("p", { class: "calc-plan-head" }, el("strong", { text: rank }), " ", shape),
      item.slice(1).map((line) => el("span", { class: "calc-plan-line" }, ...linked(line))));
  }

  function renderLines(block) {
    return el("ul", { class: "calc-lines" }, block.items.map((item) => {
      if (PLAN.test(item[0])) return renderPlan(item, null);
      const split = item[0].match(/^(\S.*?\S)\s{2,}(\S.*)$/);
      const rest = item.slice(1).flatMap((line) => [el("br"), ...linked(line)]);
      const warn = WARNING.test(item.join(" ")) ? "calc-warning" : null;
      if (split) {
        return el("li", { class: warn }, el("span", { class: "calc-label", text: split[1] }), " ",
                  el("span", { class: "calc-value" }, ...linked(split[2]), rest));
      }
      return el("li", { class: ["calc-whole", warn].filter(Boolean).join(" ") },
                ...linked(item[0]), rest);
    }));
  }

  let tableCount = 0;

  // The title stays outside the scrolled box, so a narrow screen scrolls the numbers only.
  function renderTable(block) {
    const id = `calc-table-${++tableCount}`;
    const table = el("table", { class: "calc-table", "aria-labelledby": id },
      el("thead", {}, el("tr", {}, block.header.map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, block.rows.map((row) => el("tr", {}, row.map((cell, i) =>
        el(i === 0 ? "th" : "td", i === 0 ? { scope: "row", text: cell } : { text: cell }))))));
    return el("div", { class: "calc-table-block" },
      el("p", { class: "calc-table-title", id, text: block.title }),
      block.before.length ? renderLines({ items: block.before.map((n) => [n]) }) : null,
      el("div", { class: "calc-scroll", tabindex: 0, role: "region", "aria-labelledby": id }, table),
      block.notes.length ? renderLines({ items: block.notes.map((n) => [n]) }) : null);
  }

  function renderList(block) {
    return el("div", { class: "calc-assumptions" },
      el("p", { class: "calc-list-title", text: block.title }),
      el("ul", {}, block.items.map((t) => el("li", { text: t }))));
  }

  // ---------------------------------------------------------------- the pictures

  const UNITS = {
    bytes: [[2 ** 40, "TiB"], [2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"], [1, "B"]],
    seconds: [[1, "s"], [1e-3, "ms"], [1e-6, "µs"]],
    count: [[1, ""]],
  };

  function unitFor(kind, max) {
    const units = UNITS[kind];
    return units.find(([scale]) => max >= scale) || units[units.length - 1];
  }

  function niceTicks(max, count) {
    if (!(max > 0)) return { top: 1, values: [0, 1] };
    const raw = max / count;
    const mag = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
    const top = Math.ceil(max / step - 1e-9) * step;
    const values = [];
    for (let i = 0; i * step <= top * (1 + 1e-9); i++) values.push(i * step);
    return { top, values };
  }

  function tickText(value) {
    return Number(value.toPrecision(4)).toLocaleString(US, { maximumFractionDigits: 3 });
  }

  // Bars over named categories, each a stack of segments (a segment ends at `top`, or
  // `value` above the one below it); an optional reference line.
  function barChart({ width, categories, stacks, kind, yTitle, xTitle, line, label, always }) {
    const height = 230, left = 58, right = 12, top = 26, bottom = 44;
    const tops = stacks.map((s) => s.reduce((a, seg) => (seg.top !== undefined ? seg.top : a + seg.value), 0));
    const data = Math.max(...tops);
    const lineShown = Boolean(line) && (always || line.value <= 4 * Math.max(data, 1e-300));
    const [scale, unit] = unitFor(kind, Math.max(data, lineShown ? line.value : 0));
    const { top: yTop, values } = niceTicks(Math.max(data, lineShown ? line.value : 0) / scale, 4);
    const plotW = width - left - right, plotH = height - top - bottom;
    const y = (v) => top + plotH - (v / scale / yTop) * plotH;
    const band = plotW / categories.length, barW = Math.min(band * 0.62, 56);
    const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                            "aria-label": label, class: "calc-svg" });
    svg.append(el("text", { x: 4, y: 13, class: "calc-axis-title",
                            text: unit ? `${yTitle} (${unit})` : yTitle }));
    for (const v of values) {
      svg.append(el("line", { x1: left, x2: width - right, y1: y(v * scale), y2: y(v * scale),
                              class: v === 0 ? "calc-axis" : "calc-grid" }));
      svg.append(el("text", { x: left - 6, y: y(v * scale) + 4, class: "calc-tick",
                              "text-anchor": "end", text: tickText(v) }));
    }
    categories.forEach((name, i) => {
      const x = left + band * i + (band - barW) / 2;
      let base = 0;
      for (const seg of stacks[i]) {
        const end = seg.top !== undefined ? seg.top : base + seg.value;
        svg.append(el("rect", { x, y: y(end), width: barW, height: Math.max(y(base) - y(end), 0),
                                class: `calc-bar ${seg.class}` }, el("title", { text: seg.title })));
        base = end;
      }
      svg.append(el("text", { x: x + barW / 2, y: top + plotH + 16, class: "calc-tick",
                              "text-anchor": "middle", text: name }));
    });
    svg.append(el("text", { x: left + plotW / 2, y: height - 6, class: "calc-axis-title",
                            "text-anchor": "middle", text: xTitle }));
    // The line's label sits above it (below it when the line is near the top), unless a
    // bar reaches the line: then the legend alone names it, and no bar is written over.
    const labelled = lineShown && tops.every((t) => t < 0.8 * line.value);
    if (lineShown) {
      const ly = y(line.value);
      svg.append(el("line", { x1: left, x2: width - right, y1: ly, y2: ly, class: "calc-limit" }));
      if (labelled) {
        svg.append(el("text", { x: left + 4, y: ly - 5 < top ? ly + 14 : ly - 5,
                                class: "calc-limit-text", text: line.text }));
      }
    }
    return { svg, lineShown, labelled };
  }

  function legend(entries) {
    return el("ul", { class: "calc-legend" }, entries.map(([cls, text]) =>
      el("li", {}, el("span", { class: `calc-swatch ${cls}`, "aria-hidden": "true" }), text)));
  }

  function integer(n) { return n.toLocaleString(US); }

  function percent(fraction) {
    return `${(100 * fraction).toLocaleString(US, { maximumFractionDigits: 1 })}%`;
  }

  function memoryFigure(report, width) {
    const rows = report.lengths;
    const usable = report.serving.usable_bytes;
    const share = percent(report.serving.memory_utilization);
    const split = report.scope === "split";  // a device of the split, not the whole model
    const weights = split ? report.weight_bytes_per_device : report.weight_bytes;
    const whose = split ? "a device's" : "the";
    const { svg, lineShown } = barChart({
      width,
      categories: rows.map((r) => integer(r.tokens)),
      stacks: rows.map((r) => [
        { value: weights, class: "calc-weights", title: `${whose} weights` },
        { value: split ? r.cache_bytes_per_device : r.cache_bytes, class: "calc-cache",
          title: `${split ? "a device's share of " : ""}one conversation's cache at `
            + `${integer(r.tokens)} tokens` }]),
      kind: "bytes", yTitle: split ? "memory of a device" : "memory",
      xTitle: "tokens in the conversation",
      line: { value: usable, text: `memory the engine may use (${share} of the chip's)` },
      always: true,
      label: `Bars of ${whose} weights and ${split ? "its share of " : ""}one `
        + `conversation's cache at ${rows.length} length${rows.length === 1 ? "" : "s"}, `
        + `${integer(rows[0].tokens)} to ${integer(rows[rows.length - 1].tokens)} tokens, `
        + `against the memory the serving engine may use, ${share} of the chip's; `
        + "the table below gives the numbers.",
    });
    const entries = [["calc-weights", `${whose} weights`],
                     ["calc-cache", `${split ? "its share of " : ""}one conversation's cache`],
                     ["calc-limit-swatch", lineShown
                       ? `memory the engine may use: ${share} of the chip's`
                       : `memory the engine may use (${share} of the chip's): far above these bars`]];
    const caption = split
      ? (report.weights_fit
        ? "What one conversation needs on the fullest device of the split at each length: "
          + "the device's weights, shared by every conversation, and its share of that "
          + "conversation's cache, against what the serving engine may use of its memory."
        : "A device's weights alone are more than the serving engine may use of its "
          + "memory, so the report gives no speeds; it names the splits that would fit.")
      : report.weights_fit
        ? "What one conversation needs in memory at each length: the weights, shared by "
          + "every conversation, and that conversation's cache, against what the serving "
          + "engine may use of the chip's memory."
        : "The weights alone are more than the serving engine may use of this chip's "
          + `memory: they need ${integer(report.chips_for_weights)} chips of this kind, `
          + "so the report gives no speeds.";
    return el("figure", { class: "calc-figure" }, svg, legend(entries),
      el("figcaption", { text: caption }));
  }

  function limitClass(r) {
    return `calc-${r.limited_by === "arithmetic" ? "arithmetic" : "reading"}`
      + (r.fits ? "" : " calc-nofit");
  }

  function pair(width, charts) {
    const wide = width >= 620;
    const w = wide ? Math.floor((width - 16) / 2) : width;
    return [el("div", { class: wide ? "calc-pair" : "calc-stack" }, charts.map((c) => c(w)))];
  }

  function batchFigure(report, context, width) {
    const rows = report.throughput.filter((r) => r.context === context);
    const cats = rows.map((r) => integer(r.batch));
    const title = (r) => `batch ${integer(r.batch)}: limited by ${r.limited_by}`
      + (r.fits ? "" : ", more than fit in memory");
    const charts = [
      (w) => barChart({
        width: w, categories: cats, kind: "count",
        stacks: rows.map((r) => [{ value: r.tokens_per_s, class: limitClass(r), title: title(r) }]),
        yTitle: "tokens a second, the whole machine", xTitle: "conversations in the batch",
        label: `Bars of the tokens the machine writes a second at each batch of ${cats.join(", ")}, `
          + `each conversation ${integer(context)} tokens long; the table below gives the numbers.`,
      }).svg,
      (w) => barChart({
        width: w, categories: cats, kind: "seconds",
        stacks: rows.map((r) => [{ value: r.wait_seconds, class: limitClass(r), title: title(r) }]),
        yTitle: "each conversation's wait per token", xTitle: "conversations in the batch",
        label: "Bars of the time each conversation waits for its next token at each batch; "
          + "the table below gives the numbers.",
      }).svg,
    ];
    const kinds = new Set(rows.map((r) => r.limited_by));
    const entries = [];
    if (kinds.has("reading")) entries.push(["calc-reading", "limited by reading memory"]);
    if (kinds.has("arithmetic")) entries.push(["calc-arithmetic", "limited by arithmetic"]);
    if (rows.some((r) => !r.fits)) entries.push(["calc-reading calc-nofit", "more than fit in memory"]);
    return el("figure", { class: "calc-figure" }, pair(width, charts), legend(entries),
      el("figcaption", { text: `Many conversations at once, each with ${integer(context)} `
        + "tokens of context: a larger batch writes more tokens a second in all, and each "
        + "conversation waits longer for each of its own." }));
  }

  function requestFigure(report, width) {
    const rows = report.requests;
    const { prompt, answer } = rows[0];
    const cats = rows.map((r) => integer(r.batch));
    const svg = barChart({
      width, categories: cats, kind: "seconds",
      stacks: rows.map((r) => [
        { top: r.first_token_seconds, class: "calc-given" + (r.fits ? "" : " calc-nofit"),
          title: `batch ${integer(r.batch)}: the first token` },
        { top: r.whole_seconds, class: "calc-new" + (r.fits ? "" : " calc-nofit"),
          title: `batch ${integer(r.batch)}: the rest of the answer` }]),
      yTitle: "a request's wait", xTitle: "requests in the batch",
      label: `Bars of how long a request of ${integer(prompt)} prompt tokens and `
        + `${integer(answer)} answer tokens waits for its first token and for its whole `
        + "answer at each batch; the table below gives the numbers.",
    }).svg;
    const entries = [["calc-given", "until the first token (reading the prompt)"],
                     ["calc-new", "the rest of the answer, a decode step a token"]];
    if (rows.some((r) => !r.fits)) entries.push(["calc-given calc-nofit", "more than fit in memory"]);
    return el("figure", { class: "calc-figure" }, svg, legend(entries),
      el("figcaption", { text: `One request of ${integer(prompt)} prompt tokens and `
        + `${integer(answer)} answer tokens, alone and in each batch: the time to its first `
        + "token, then to its last." }));
  }

  // The training step's memory on one device, part by part, against the chip's memory.
  const PARTS = {
    "weights": "calc-weights", "gathered weights": "calc-weights calc-light",
    "gradients": "calc-gradients", "float32 gradients": "calc-gradients calc-light",
    "float32 master weights": "calc-master", "optimizer states": "calc-optimiser",
    "activations": "calc-activations", "logits": "calc-logits",
    "float32 log-softmax": "calc-logits calc-light",
    "float32 logit gradients": "calc-logits calc-light",
  };

  function trainFigure(report, width) {
    const parts = Object.entries(report.memory).filter(([, bytes]) => bytes > 0);
    const { svg, lineShown } = barChart({
      width: Math.min(width, 420), categories: ["one device"], kind: "bytes",
      stacks: [parts.map(([name, bytes]) => ({ value: bytes, class: PARTS[name] || "calc-light",
                                               title: name }))],
      yTitle: "memory", xTitle: "",
      line: { value: report.accelerator.memory_bytes, text: "memory of the chip" },
      label: `A bar of one device's memory in a training step, by part (${parts.map(([n]) => n)
        .join(", ")}), against the memory of the chip; the table below gives the numbers.`,
    });
    const entries = parts.map(([name]) => [PARTS[name] || "calc-light", name]);
    entries.push(["calc-limit-swatch", lineShown ? "memory of the chip"
                                                 : "memory of the chip: far above this bar"]);
    return el("figure", { class: "calc-figure" }, svg, legend(entries),
      el("figcaption", { text: "What one device holds during a training step, part by part, "
        + (report.fits ? "within" : "past") + " the memory of the chip." }));
  }

  // ---------------------------------------------------------------- the form's messages

  // The command line names what it refuses by its flag ("argument --tensor-parallel/--tp:
  // 64 heads do not divide among 3 devices (...)"); the form says it beside that field,
  // in the field's own label, with the command line's reason and the values it takes.
  // A config the calculator cannot read is the model's field's. No rule is repeated
  // here: every refusal is the command line's own.
  const ARGUMENT = /^argument ((?:--[\w-]+)(?:\/--[\w-]+)*): (.*)$/s;
  const ARGUMENTS = /^arguments (--[\w-]+) and (--[\w-]+) (.*)$/s;  // two that go together
  const NUMBERS = { FLOPS: "calc-flops", BYTES_PER_S: "calc-rate", MEMORY_GIB: "calc-gib" };

  function fieldName(field) {
    if (field.dataset.name) return field.dataset.name;
    const label = field.labels && field.labels[0];
    return label ? label.innerText.replace(/\s+/g, " ").trim() : field.id;
  }

  // The fields a message is about, and what to say of each.
  function placeMessage(form, message, ownConfig) {
    const text = message.replace(/^error: /, "").trim();
    const one = text.match(ARGUMENT), two = text.match(ARGUMENTS);
    const current = modes(form);
    const inMode = (f) => !f.matches(":disabled") && applies(f, current)
      && (!["radio", "checkbox"].includes(f.type) || f.checked);
    // A message of no one argument that names fields of this mode ("plan also needs
    // --seq-len, --global-batch") is about those fields.
    const named = !one && !two ? [...form.querySelectorAll("[data-flag]")].filter(
      (f) => inMode(f) && new RegExp(`${f.dataset.flag}(?![\\w-])`).test(text)) : [];
    if (!one && !two && !named.length) {  // the config: it could not be read or counted
      const field = form.querySelector(ownConfig ? "#calc-json" : "#calc-config");
      return { fields: [field], reason: text };
    }
    const flags = one ? one[1].split("/") : two ? [two[1], two[2]] : [];
    const said = one ? one[2] : two ? `${two[1]} and ${two[2]} ${two[3]}` : text;
    let fields = named.length ? named : [...form.querySelectorAll("[data-flag]")].filter(
      (f) => flags.includes(f.dataset.flag) && inMode(f));
    // A choice that joins other fields (a chip's name, its three numbers) is those fields.
    fields = fields.flatMap((f) => {
      if (!f.dataset.join) return [f];
      const ids = f.dataset.join.split(/\s+/);
      const named = ids.filter((id) => Object.entries(NUMBERS).some(
        ([word, part]) => part === id && said.includes(word)));
      return (named.length ? named : ids).map((id) => form.querySelector(`#${id}`));
    });
    return { fields, reason: inFormWords(form, said) };
  }

  // A flag the reason names, in the form's words: the label of the field that sets it.
  function inFormWords(form, text) {
    const current = modes(form);
    return text.replace(/--[\w-]+/g, (flag) => {
      const fields = [...form.querySelectorAll("[data-flag]")].filter(
        (f) => f.dataset.flag === flag && !["radio", "checkbox"].includes(f.type));
      let field = fields.find((f) => applies(f, current)) || fields[0];
      if (field && field.type === "hidden") {  // it passes the field it joins
        field = form.querySelector(`#${field.dataset.join.split(/\s+/)[0]}`);
      }
      return field ? `“${fieldName(field)}”` : flag;
    });
  }

  function clearMessages(form) {
    for (const note of form.querySelectorAll(".calc-error")) note.remove();
    for (const field of form.querySelectorAll("[aria-invalid]")) {
      field.removeAttribute("aria-invalid");
      field.classList.remove("calc-invalid");
      const described = (field.getAttribute("aria-describedby") || "").split(" ")
        .filter((id) => id && !id.endsWith("-error"));
      if (described.length) field.setAttribute("aria-describedby", described.join(" "));
      else field.removeAttribute("aria-describedby");
    }
  }

  // Each field marked, its message right after it; the first field's name, returned.
  function showMessage(form, fields, reason) {
    clearMessages(form);
    for (const field of fields) {
      const more = field.closest("details");
      if (more) more.open = true;
      const note = el("p", { class: "calc-error", id: `${field.id}-error`,
                             text: `${fieldName(field)}: ${reason}` });
      field.after(note);
      field.classList.add("calc-invalid");
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-describedby",
        [note.id, ...(field.getAttribute("aria-describedby") || "").split(" ")]
          .filter(Boolean).join(" "));
    }
    return fields.length ? fieldName(fields[0]) : null;
  }

  // ---------------------------------------------------------------- the whole report

  // Which picture goes before which table of the text report: the table's title starts so.
  function pictures(report, width) {
    if (report.plans) return [];  // the ranked plans: their text says it all
    if (report.training) {
      return [["Memory of one device by part", () => trainFigure(report, width)]];
    }
    const found = [["Cache and memory by conversation length", () => memoryFigure(report, width)]];
    for (const context of report.batch_contexts) {
      if (report.throughput.some((r) => r.context === context)) {
        found.push([`Many conversations at once, each with ${integer(context)} tokens`,
                    () => batchFigure(report, context, width)]);
      }
    }
    if (report.requests.length) found.push(["A request of", () => requestFigure(report, width)]);
    return found;
  }

  function renderReport(results, report, text, argv) {
    const width = Math.max(280, Math.floor(results.clientWidth || 640));
    const blocks = parseReport(text);
    const waiting = pictures(report, width);
    const parts = [el("p", { class: "calc-command" }, "The same on the command line: ",
      el("code", { text: ["python", "-m", "transformer_calculator", ...argv].map(shellWord).join(" ") }))];
    for (const block of blocks) {
      const picture = block.kind === "table"
        && waiting.find(([title]) => block.title.startsWith(title));
      if (picture) {
        parts.push(picture[1]());
        waiting.splice(waiting.indexOf(picture), 1);
      }
      if (block.kind === "table") parts.push(renderTable(block));
      else if (block.kind === "list") parts.push(renderList(block));
      else parts.push(renderLines(block));
    }
    for (const [, draw] of waiting) parts.push(draw());
    results.replaceChildren(...parts);
  }

  // ---------------------------------------------------------------- the form

  function init(root) {
    const form = root.querySelector(".calc-form");
    const status = root.querySelector(".calc-status");
    const results = root.querySelector(".calc-results");
    const runtimeNote = root.querySelector(".calc-runtime");
    const textarea = root.querySelector("#calc-json");
    const fileInput = root.querySelector("#calc-file");
    const maxBytes = Number(root.dataset.maxFileBytes);
    const example = JSON.parse(root.querySelector(".calc-example").textContent);
    // What the form shows, for scripts and tests: state, argv, report, text, error.
    const api = (window.bookCalculator = {
      state: "example", argv: example.argv, answers: 0, inFlight: 0 });
    let own = { name: "your-model", bytes: null };
    let shown = null;  // what the results show: {report, text, argv}
    let worker = null, ready = false, wanted = false, seq = 0, latest = 0;
    const pending = new Map();  // replies awaited from the worker, by request id

    function setState(state, message, isError) {
      api.state = state;
      root.dataset.state = state;
      status.classList.toggle("calc-status--error", Boolean(isError));
      status.textContent = message;
    }

    function display(report, text, argv, source) {
      shown = { report, text, argv };
      Object.assign(api, { report, text, argv, error: null, source });
      results.hidden = false;
      renderReport(results, report, text, argv);
    }

    function subject(report) {
      if (report.plans) {
        return `${report.plans.length.toLocaleString(US)} plans for ${report.model} on `
          + `${report.chips.toLocaleString(US)} x ${report.chip}`;
      }
      return `${report.model.name} on ${report.accelerator.name}`;
    }

    // The model's argument and the file the worker writes for it, if it is the reader's.
    function modelArgument() {
      if (form.querySelector("#calc-source-shipped").checked) {
        return { arg: form.querySelector("#calc-config").value, shown: null, files: {} };
      }
      const bytes = own.bytes || new TextEncoder().encode(textarea.value);
      const file = own.name === "your-model" ? "your-model/config.json" : `${own.name}.json`;
      return { arg: `${INPUT}/${file}`, shown: file, files: { [`${INPUT}/${file}`]: bytes } };
    }

    // Not computed: each field at fault marked, its message beside it in the form's
    // words, and the status (by the Compute button) naming the field; a reader who
    // pressed Compute is taken to it.
    function refuse(fields, reason, said, asked, argv) {
      const name = showMessage(form, fields, reason);
      Object.assign(api, { error: said, message: name ? `${name}: ${reason}` : reason,
                           fields: fields.map((f) => f.id), report: null, text: null,
                           argv: argv || api.argv });
      api.answers += said === null ? 1 : 0;
      results.hidden = true;
      setState("error", name ? `Not computed: see “${name}” above, marked in red: ${reason}`
                             : `Not computed: ${reason}`, true);
      if (asked && fields.length) fields[0].focus({ preventScroll: true });
      if (asked && fields.length) fields[0].scrollIntoView({ block: "center" });
    }

    function compute(asked = false) {
      if (root.dataset.live !== "yes" || api.state === "unavailable") return;
      if (!ready) {
        wanted = true;
        start();
        return;
      }
      const ownConfig = form.querySelector("#calc-source-own").checked;
      if (ownConfig && !own.bytes && !textarea.value.trim()) {
        refuse([textarea], "the box is empty: paste the text of a config.json here, or "
          + "choose the file below", null, asked);
        return;
      }
      const model = modelArgument();
      const argv = [command(form), model.arg, ...flagArguments(form)];
      const shownArgv = model.shown ? [argv[0], model.shown, ...argv.slice(2)] : argv;
      const id = (latest = ++seq);
      const t0 = performance.now();
      const slow = setTimeout(() => id === latest && setState("computing", "Computing…"), 150);
      const reply = new Promise((resolve) => pending.set(id, resolve));
      api.inFlight = pending.size;
      worker.postMessage({ kind: "run", id, argv, files: model.files });
      reply.then(({ json, text }) => {
        clearTimeout(slow);
        if (id !== latest) return;
        api.answers += 1;
        if (json.code !== 0) {
          const said = json.err.trim() || `the calculator stopped with exit code ${json.code}`;
          const { fields, reason } = placeMessage(form, said, ownConfig);
          refuse(fields, reason, said, asked, shownArgv);
          return;
        }
        clearMessages(form);
        const report = JSON.parse(json.out);
        display(report, text.out, shownArgv, "browser");
        const ms = Math.max(1, Math.round(performance.now() - t0));
        setState("computed", `Computed in your browser in ${ms} ms: ${subject(report)}.`);
      });
    }

    function unavailable(message) {
      form.querySelectorAll("fieldset, button").forEach((f) => { f.disabled = true; });
      runtimeNote.textContent = "";
      setState("unavailable", message, true);
    }

    function start() {
      if (worker) return;
      if (typeof WebAssembly !== "object" || typeof WebAssembly.instantiate !== "function"
          || typeof Worker !== "function") {
        unavailable("This browser has WebAssembly (or web workers) turned off, so the "
          + "calculator cannot run in this page. The report shown is the example computed "
          + "when the book was built; the command line gives the same report for any "
          + "model: python -m transformer_calculator report config.json");
        return;
      }
      if (location.protocol === "file:") {
        unavailable("This page was opened as a file, and browsers do not start the "
          + "calculator's runtime in pages opened from file://. Serve the book's folder "
          + "over http, for example with python -m http.server --directory book/_build/html, "
          + "and open this page there. The report shown is the example computed when the "
          + "book was built.");
        return;
      }
      runtimeNote.textContent = "Starting the calculator in your browser…";
      worker = new Worker(new URL("calculator-worker.js", SCRIPT), { type: "module" });
      worker.onmessage = ({ data }) => {
        if (data.kind === "ready") {
          ready = true;
          api.startSeconds = data.seconds;
          api.startStages = data.stages;  // Python itself, then the calculator's import
          root.dataset.startSeconds = data.seconds.toFixed(2);
          runtimeNote.textContent = `Running in your browser (started in ${data.seconds.toFixed(1)} s).`;
          if (wanted) compute();
        } else if (data.kind === "failed") {
          unavailable(`The calculator could not start in this browser: ${data.message}`);
        } else if (data.kind === "result") {
          const resolve = pending.get(data.id);
          pending.delete(data.id);
          api.inFlight = pending.size;
          if (resolve) resolve(data);
        }
      };
      worker.onerror = (event) => unavailable(
        `The calculator could not start in this browser: ${event.message || "the worker failed"}`);
      worker.postMessage({ kind: "start", runtime: new URL("../pyodide/", SCRIPT).href,
                           bundle: new URL(root.dataset.bundle, SCRIPT).href });
    }

    async function readFile(file) {
      const name = file.name.replace(/\.json$/i, "").replace(/[^\w.-]+/g, "-") || "your-model";
      const bytes = new Uint8Array(await file.slice(0, maxBytes + 1).arrayBuffer());
      own = { name: name === "config" ? "your-model" : name, bytes };
      textarea.value = file.size <= maxBytes
        ? new TextDecoder("utf-8").decode(bytes) : "";
      form.querySelector("#calc-source-own").checked = true;
      compute();
    }

    // A field that belongs to a choice selects it when the reader uses it.
    form.addEventListener("input", (e) => {
      if (e.target.getAttribute("aria-invalid")) {  // being mended: its mark goes
        const note = form.querySelector(`#${e.target.id}-error`);
        if (note) note.remove();
        e.target.removeAttribute("aria-invalid");
        e.target.classList.remove("calc-invalid");
      }
      const id = e.target.dataset && e.target.dataset.selects;
      if (id) form.querySelector(`#${id}`).checked = true;
      if (e.target === textarea) own.bytes = null;
    });
    const chipList = form.querySelector("#calc-chip-name");
    const chipAbout = form.querySelector("#calc-chip-about");
    // What the form says of the chosen chip: the datasheet's words and their source.
    function describeChip() {
      const option = chipList.selectedOptions[0];
      chipAbout.replaceChildren(`${option.dataset.figures}. ${option.dataset.note}. `, el("a", {
        href: option.dataset.source, class: "calc-chip-source", rel: "noopener",
        text: "Source of these figures" }));
    }
    form.addEventListener("change", (e) => {
      if (e.target === chipList) describeChip();
      if (e.target.name === "calc-command" || e.target.name === "calc-goal") showMode(form);
      if (e.target === fileInput) {
        if (fileInput.files[0]) readFile(fileInput.files[0]);
      } else if (e.target.id === "calc-source-own" && !textarea.value.trim() && !own.bytes) {
        textarea.focus();  // nothing to read yet: wait for a paste or a file
      } else if (e.target !== textarea) {
        const id = e.target.dataset && e.target.dataset.selects;
        if (id) form.querySelector(`#${id}`).checked = true;
        compute();
      }
    });
    form.addEventListener("submit", (e) => { e.preventDefault(); compute(true); });
    for (const type of ["dragenter", "dragover"]) {
      textarea.addEventListener(type, (e) => { e.preventDefault(); textarea.classList.add("calc-drop"); });
    }
    textarea.addEventListener("dragleave", () => textarea.classList.remove("calc-drop"));
    textarea.addEventListener("drop", (e) => {
      e.preventDefault();
      textarea.classList.remove("calc-drop");
      const file = e.dataTransfer && e.dataTransfer.files[0];
      if (file) readFile(file);
    });

    showMode(form);
    describeChip();
    // The example the build computed, shown at once (and kept in print).
    const report = JSON.parse(example.json.out);
    display(report, example.text.out, example.argv, "build");
    setState("example", `Shown: the report computed when the book was built, ${subject(report)}.`);

    // Redraw the pictures when the column's width changes (a phone turned, a window resized).
    let lastWidth = results.clientWidth;
    new ResizeObserver(() => {
      if (shown && Math.abs(results.clientWidth - lastWidth) > 8 && !results.hidden) {
        lastWidth = results.clientWidth;
        renderReport(results, shown.report, shown.text, shown.argv);
      }
    }).observe(results);

    if (root.dataset.live !== "yes") return;  // the print edition: the example only
    // Fetch the runtime when the form comes near the screen, or is used; then compute
    // what the form says, so every number shown from then on is the browser's.
    const near = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        near.disconnect();
        wanted = true;
        start();
      }
    }, { rootMargin: "600px 0px" });
    near.observe(root);
    form.addEventListener("focusin", () => { wanted = true; start(); }, { once: true });
  }

  function boot() {
    document.querySelectorAll(".calc").forEach(init);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
