"""The calculator in the page, in the real browser, with no network.

The appendix page "Do the arithmetic for your own model" is built into a small book of
its own (the page, the glossary and the bibliography, with the site's extensions and
the Pyodide runtime the Makefile fetched), served over loopback HTTP and opened in
Debian's Chromium driven by Playwright, every outside address unresolvable. The page
runs the library's calculator under Pyodide; its numbers are compared with the command
line's, run here in this process (``transformer_calculator.command_line.cli.main``, what
``python -m transformer_calculator`` runs):

- every shipped config: the page's report (its ``--json`` numbers) equals the command
  line's, and every word and number of the command line's text report appears in the
  page's tables and lists, in order, and nothing else does;
- llama-3-8b: 8,030,261,248 parameters and its cache bytes, as the issue states them;
- the form speaks the form's language: a question the calculator refuses (a broken JSON
  pasted, an empty paste, a batch of 0, a prompt without its answer, a tensor-parallel
  size that does not divide the heads, micro-batches that do not divide the batch) marks
  the field at fault and says, right after it and in its own label, the command line's
  reason and the values it takes, with no flag named; "4096," is the list 4096;
- another chip changes the times, to the command line's times for that chip;
- the questions of issue 21 through the form: llama-3-8b on the H100 SXM chosen by name,
  at 8,192 tokens, batches of 1 and 32, a request of 2,000 + 500 tokens, gives the
  command line's numbers and words, with a picture for each (the engine's memory
  marked); mixtral-8x7b does not fit an L40S as published (the report's line on the
  chips it needs, no speed picture) and fits with int4 weights and an fp8 cache; the
  train mode gives ``train``'s numbers and words, and a training split every table of
  its text as a table; a split's table says how long its conversation is;
- the plan mode gives ``plan``'s ranked plans, word for word and number for number, for
  a training run and for a service on a named chip, showing only the fields of its goal
  (a field may belong to several modes), and a goal given in part marks the fields it
  lacks; a price, a PUE and a draft model give the command line's money, energy and
  speculative decoding in report, and train's money; a draft under a split is refused
  beside the draft's field;
- the keyboard alone can use the form, every control has a label, the results are
  announced (a live region), and at 390 px nothing is wider than the screen and every
  chip's name reads whole in the list;
- without WebAssembly the page says so and keeps the example the build computed;
- the runtime is fetched by this page only, from the site itself.

How long the calculator takes to start is written to test-artifacts/calculator.json,
with screenshots at 1280 and 390 px.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import math
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from book_files import BOOK, ROOT
from transformer_calculator.command_line.cli import main as command_line
from transformer_calculator.reading.config import example_configs

pytestmark = [pytest.mark.site, pytest.mark.slow(seconds=20)]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"
PAGE = "chapters/appendix/01_your_model"
STARTED_WITHIN = 30.0
"""Seconds the calculator may take to start here (a laptop takes a few; this bound
only catches a hang or a runtime that never answers on a busy shared machine)."""

BROKEN = '{"model_type": "llama", "hidden_size": 4096,\n  "num_hidden_layers": 32,,}'
CHIP = ("400e12", "3.3e12", "80")

# Every word and number the page's report shows, in document order.
SHOWN = ", ".join(f".calc-results {part}" for part in (
    ".calc-lines li", ".calc-table-title", ".calc-table th", ".calc-table td",
    ".calc-list-title", ".calc-assumptions li"))
SHOWN_TEXT = f"[...document.querySelectorAll({SHOWN!r})].map(e => e.innerText).join(' ')"


def screenshot(page, path: Path) -> None:
    """The form and its report as a reader scrolls through them, without the page's
    sticky header pasted over them at every screenful."""
    style = page.add_style_tag(content=".bd-header-article, .bd-header, .skip-link "
                                       "{ visibility: hidden !important; }")
    try:
        page.locator(".calc").screenshot(path=str(path))
    finally:
        style.evaluate("e => e.remove()")


def cli(*argv: str) -> tuple[int, str, str]:
    """The command line on ``argv``: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command_line(list(argv))
    return code, out.getvalue(), err.getvalue()


def words(text: str) -> list[str]:
    """The text's words, without the rows of dashes under a table's header."""
    return [w for w in text.split() if set(w) != {"-"}]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The calculator's page built into a small book of its own."""
    book = tmp_path_factory.mktemp("calculator-book")
    for name in ("_config.yml", "references.bib", "glossary.md", "bibliography.md"):
        shutil.copy(BOOK / name, book / name)
    shutil.copytree(BOOK / "_static", book / "_static")
    for runtime in ("_mathjax", "_pyodide"):
        (book / runtime).symlink_to(BOOK / runtime)
    (book / PAGE).parent.mkdir(parents=True)
    shutil.copy(BOOK / f"{PAGE}.ipynb", book / f"{PAGE}.ipynb")
    (book / "_toc.yml").write_text(
        f"format: jb-book\nroot: {PAGE}\nchapters:\n  - file: glossary\n"
        "  - file: bibliography\n")
    jb = Path(sys.executable).with_name("jupyter-book")
    run = subprocess.run([str(jb), "build", str(book)], capture_output=True, text=True)
    assert run.returncode == 0, f"the build failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return book / "_build" / "html"


@pytest.fixture(scope="module")
def browser(site):
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed: `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
            yield chromium, base
            chromium.close()
    finally:
        server.shutdown()


class Tab:
    """One page of the site in a fresh browser context, with what it asked for and
    every console error."""

    def __init__(self, browser, base: str, width: int = 1280, init_script: str = ""):
        chromium, self.base = browser
        self.context = chromium.new_context(viewport={"width": width, "height": 900})
        if init_script:
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        self.requests, self.errors = [], []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, doc: str, anchor: str = "", wait: str = "load") -> float:
        start = time.perf_counter()
        self.page.goto(f"{self.base}{doc}.html{anchor}", wait_until=wait)
        return start

    def state(self) -> str:
        return self.page.get_attribute(".calc", "data-state")

    def wait_for(self, *states: str, timeout: float = 60) -> str:
        self.page.wait_for_function(
            "states => states.includes(document.querySelector('.calc').dataset.state)",
            arg=list(states), timeout=timeout * 1000)
        return self.state()

    def compute(self) -> str:
        """Press Compute and wait for the browser's answer (a report or an error)."""
        before = self.page.evaluate("window.bookCalculator.answers")
        self.page.click("button.calc-compute")
        return self.answered(before)

    def answered(self, before: int) -> str:
        self.page.wait_for_function(  # the last answer asked for, none still coming
            "n => window.bookCalculator.answers > n && !window.bookCalculator.inFlight",
            arg=before, timeout=60_000)
        return self.state()

    def outside(self) -> list[str]:
        return [u for u in self.requests if not u.startswith((self.base, "data:", "blob:"))]

    def close(self):
        self.context.close()


@pytest.fixture(scope="module")
def tab(browser):
    """The calculator's page, opened at the form, with the calculator started."""
    t = Tab(browser, browser[1])
    start = t.open(PAGE, "#calculator-form")
    assert t.state() in ("example", "computed"), t.state()
    assert t.wait_for("computed", "unavailable") == "computed", t.page.inner_text(".calc-status")
    opened = time.perf_counter() - start
    started = float(t.page.get_attribute(".calc", "data-start-seconds"))
    (ARTIFACTS / "calculator.json").write_text(json.dumps({
        "seconds_from_navigation_to_first_browser_report": round(opened, 2),
        "seconds_the_worker_took_to_start_python_and_the_calculator": started,
    }, indent=1))
    t.started = started
    yield t
    t.close()


def choose(tab: Tab, name: str) -> None:
    tab.page.check("#calc-source-shipped")
    tab.page.select_option("#calc-config", name)


def reset(tab: Tab) -> None:
    """Every option of the form back to empty (the command line's defaults), the
    report mode, the book's example chip; nothing is computed."""
    tab.page.evaluate("""() => {
        for (const f of document.querySelectorAll('.calc-form [data-flag]')) {
            if (f.type === 'text') f.value = '';
            else if (f.tagName === 'SELECT') f.selectedIndex = 0;
            else if (f.type === 'checkbox') f.checked = false;
        }
        document.querySelector('.calc-more').open = false;
        document.querySelector('#calc-json').value = '';
        document.querySelector('#calc-goal-training').checked = true;
    }""")
    tab.page.check("#calc-command-report")
    tab.page.check("#calc-chip-example")


REQUEST = {"#calc-context": "8192", "#calc-batch": "1,32", "#calc-prompt": "2000",
           "#calc-answer": "500"}
REQUEST_ARGV = ("report", "llama-3-8b", "--chip", "h100-sxm", "--context", "8192",
                "--batch", "1,32", "--prompt", "2000", "--answer", "500")


def ask_the_request(tab: Tab) -> None:
    """llama-3-8b on the H100 SXM chosen by name, with the request's four fields."""
    choose(tab, "llama-3-8b")
    tab.page.check("#calc-chip-named")
    tab.page.select_option("#calc-chip-name", "h100-sxm")
    for field, value in REQUEST.items():
        tab.page.fill(field, value)
    assert tab.compute() == "computed", tab.page.inner_text(".calc-status")


PLAN_TOLERANCE = 1e-12
"""How near the page's plan figures are to this process's: the page's Python runs on
WebAssembly's maths library, whose results for a few functions differ from this
machine's in the last bit (plans' figures come out one unit of the 16th digit apart);
the text, rounded, is word for word the same."""


def close(a, b) -> bool:
    """JSON values equal, their floats to within ``PLAN_TOLERANCE`` of each other."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            math.isclose(a, b, rel_tol=PLAN_TOLERANCE, abs_tol=0)
    return a == b


def first_difference(a, b, path: str = "") -> str:
    """Where two JSON values first differ, and how."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k, "<absent>") != b.get(k, "<absent>"):
                return first_difference(a.get(k, "<absent>"), b.get(k, "<absent>"),
                                        f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {a!r} against {b!r}"


def shown_like_the_command_line(tab: Tab, *argv: str) -> dict:
    """The page's report equals the command line's JSON, and its tables and lines say
    the command line's words; the command line's JSON, returned."""
    code, out, _ = cli(*argv, "--json")
    assert code == 0
    expected = json.loads(out)
    shown = tab.page.evaluate("window.bookCalculator.report")
    if argv[0] == "plan":  # a search's many sums: the last bit may differ, see below
        assert close(shown, expected), first_difference(shown, expected)
    else:
        assert shown == expected, first_difference(shown, expected)
    code, text, _ = cli(*argv)
    assert code == 0 and words(tab.page.evaluate(SHOWN_TEXT)) == words(text)
    command = tab.page.inner_text(".calc-command code")
    assert command.endswith(" ".join(argv)), command
    return expected


def test_the_calculator_starts_offline_from_the_site_itself(tab):
    assert tab.started < STARTED_WITHIN
    assert not tab.outside(), f"the page asked the network for: {tab.outside()}"
    fetched = [u for u in tab.requests if "/_static/pyodide/" in u or u.endswith(".zip")]
    assert any(u.endswith("pyodide.asm.wasm") for u in fetched), fetched
    assert not tab.errors, tab.errors


def test_llama_3_8b_has_its_parameters_and_cache(tab):
    choose(tab, "llama-3-8b")
    assert tab.compute() == "computed"
    lines = " ".join(tab.page.evaluate(SHOWN_TEXT).split())
    assert "Parameters 8,030,261,248 Weights" in lines, lines
    report = tab.page.evaluate("window.bookCalculator.report")
    assert report["parameters"] == 8_030_261_248
    # 32 layers x 8 key-value heads x 128 numbers x (key + value) x 2 bytes a number
    assert report["kv_bytes_per_token"] == 32 * 8 * 128 * 2 * 2 == 131_072
    assert "Cache per token 128.00 KiB (131,072 bytes)" in lines
    cache = tab.page.locator(".calc-table").first.inner_text()
    for row in report["lengths"]:
        assert row["cache_bytes"] == row["tokens"] * 131_072
    assert "1,024\t128.00 MiB" in cache and "131,072 *\t16.00 GiB" in cache, cache  # past 8,192: marked


@pytest.mark.parametrize("config", [p.stem for p in example_configs()])
def test_every_shipped_config_gives_the_command_lines_numbers(tab, config):
    choose(tab, config)
    assert tab.compute() == "computed", tab.page.inner_text(".calc-status")
    code, out, _ = cli("report", config, "--json")
    assert code == 0
    report = json.loads(out)
    assert tab.page.evaluate("window.bookCalculator.report") == report
    code, text, _ = cli("report", config)
    assert words(tab.page.evaluate(SHOWN_TEXT)) == words(text)
    # memory; tokens and wait, unless the weights do not fit (then no speed is given)
    pictures = 1 + 2 * len(report["batch_contexts"]) if report["weights_fit"] else 1
    assert tab.page.locator(".calc-results svg").count() == pictures


def refused_beside(tab: Tab, fields: list[str], argv: tuple[str, ...] | None,
                   config: Path | None = None) -> str:
    """The form's answer to a question the calculator refuses: nothing computed, each field
    at fault marked, its message right after it in the field's own label with the command
    line's reason (and no flag), the status naming the first field; with ``argv``, the
    command line refuses it too, for the reason shown. The first message, returned."""
    page = tab.page
    assert tab.state() == "error", page.inner_text(".calc-status")
    assert page.locator(".calc-results").is_hidden()
    notes = []
    for field in fields:
        assert page.get_attribute(field, "aria-invalid") == "true", field
        note = page.evaluate("""f => { const n = document.querySelector(f).nextElementSibling;
            return n && {cls: n.className, text: n.innerText, id: n.id}; }""", field)
        assert note and note["cls"] == "calc-error", f"no message right after {field}: {note}"
        assert note["id"] in page.get_attribute(field, "aria-describedby").split()
        label = page.evaluate("""f => { const e = document.querySelector(f);
            return e.dataset.name || e.labels[0].innerText.replace(/\\s+/g, ' ').trim(); }""", field)
        assert note["text"].startswith(f"{label}: "), (label, note["text"])
        assert "--" not in note["text"], f"a flag in the form's message: {note['text']}"
        notes.append((label, note["text"][len(label) + 2:]))
    status = page.inner_text(".calc-status")
    first, shown = notes[0]
    assert status.startswith(f"Not computed: see “{first}”") and shown in status, status
    if argv is not None:
        code, _, err = cli(*argv)
        assert code in (1, 2) and "\n" not in err.strip()
        assert tab.page.evaluate("window.bookCalculator.error") == err.strip()
        reason = err.strip().removeprefix("error: ")
        if reason.startswith("argument "):
            reason = reason.split(": ", 1)[1]
        if "--" not in reason:   # a reason naming no other flag is the command line's own words
            assert shown == reason, (shown, err)
    return f"{first}: {shown}"


def test_a_broken_json_is_answered_beside_the_box(tab, tmp_path):
    tab.page.fill("#calc-json", BROKEN)
    assert tab.page.is_checked("#calc-source-own")   # typing there chose it
    assert tab.compute() == "error"
    folder = tmp_path / "your-model"
    folder.mkdir()
    (folder / "config.json").write_text(BROKEN)
    note = refused_beside(tab, ["#calc-json"], ("report", str(folder / "config.json")))
    assert note.startswith("Your config.json: config.json is not valid JSON"), note
    assert tab.page.get_attribute(".calc-status", "role") == "status"
    tab.page.fill("#calc-json", "")   # mending the field takes its mark away
    assert not tab.page.get_attribute("#calc-json", "aria-invalid")
    assert not tab.page.locator("#calc-json-error").count()


def test_an_empty_paste_asks_for_the_file(tab):
    reset(tab)
    tab.page.check("#calc-source-own")
    assert tab.compute() == "error"
    note = refused_beside(tab, ["#calc-json"], None)
    assert "the box is empty" in note, note
    assert tab.page.evaluate("document.activeElement.id") == "calc-json"   # taken to it
    reset(tab)


def test_another_chip_changes_the_times_to_the_command_lines(tab):
    choose(tab, "llama-3-8b")
    tab.page.check("#calc-chip-example")
    assert tab.compute() == "computed"
    before = tab.page.evaluate("window.bookCalculator.report.decode")
    for field, value in zip(("#calc-flops", "#calc-rate", "#calc-gib"), CHIP):
        tab.page.fill(field, value)
    assert tab.page.is_checked("#calc-chip-own")
    assert tab.compute() == "computed"
    after = tab.page.evaluate("window.bookCalculator.report")
    assert [r["seconds_per_token"] for r in after["decode"]] != [
        r["seconds_per_token"] for r in before]
    code, text, _ = cli("report", "llama-3-8b", "--accelerator", ",".join(CHIP))
    assert code == 0 and words(tab.page.evaluate(SHOWN_TEXT)) == words(text)
    command = tab.page.inner_text(".calc-command code")
    assert command.endswith(f"report llama-3-8b --accelerator {','.join(CHIP)}"), command
    tab.page.check("#calc-chip-example")


def test_the_form_works_from_the_keyboard_and_says_what_each_control_is(tab):
    page = tab.page
    unlabelled = page.evaluate("""[...document.querySelectorAll(
        '.calc-form input:not([type=hidden]), .calc-form select, .calc-form textarea')]
        .filter(e => !e.labels || e.labels.length === 0).map(e => e.id)""")
    assert not unlabelled, unlabelled
    assert page.locator(".calc-form fieldset").count() >= 8
    assert page.locator(".calc-form fieldset:not(:has(> legend))").count() == 0
    described = page.evaluate("""[...document.querySelectorAll('[aria-describedby]')]
        .flatMap(e => e.getAttribute('aria-describedby').split(' '))
        .filter(id => !document.getElementById(id))""")
    assert not described, f"hints that are not on the page: {described}"
    assert page.get_attribute(".calc-status", "aria-live") == "polite"
    choose(tab, "mistral-7b-v0.1")
    page.focus("#calc-gib")
    page.keyboard.press("Control+A")
    page.keyboard.type("48")
    before = page.evaluate("window.bookCalculator.answers")
    page.keyboard.press("Enter")                       # submits the form
    assert tab.answered(before) == "computed"
    report = page.evaluate("window.bookCalculator.report")
    assert report["model"]["name"] == "mistral-7b-v0.1"
    assert report["accelerator"]["memory_bytes"] == 48 * 2**30
    assert "mistral-7b-v0.1" in page.inner_text(".calc-status")
    page.check("#calc-chip-example")


def test_a_request_on_a_named_chip_gives_the_command_lines_numbers(tab):
    reset(tab)
    ask_the_request(tab)
    expected = shown_like_the_command_line(tab, *REQUEST_ARGV)
    assert [r["batch"] for r in expected["throughput"]] == [1, 32]
    assert len(expected["requests"]) == 2
    page = tab.page
    # the memory picture, the batch's two and the request's, each before its table
    figures = page.locator(".calc-results figure")
    assert figures.count() == 3 and page.locator(".calc-results svg").count() == 4
    titles = page.evaluate("""[...document.querySelectorAll('.calc-results figure')].map(
        f => f.nextElementSibling.querySelector('.calc-table-title').innerText)""")
    assert [t.split(",")[0].split(" (")[0] for t in titles] == [
        "Cache and memory by conversation length", "Many conversations at once",
        "A request of 2"], titles
    # the memory picture marks the engine's share of the chip's memory, and the weights
    memory = figures.nth(0)
    share = expected["serving"]["memory_utilization"]
    assert memory.locator("line.calc-limit").count() == 1
    assert f"{share:.0%} of the chip's" in memory.locator(".calc-limit-text").text_content()
    assert f"{share:.0%} of the chip's" in memory.locator(".calc-legend").inner_text()
    assert memory.locator("rect.calc-weights title").first.text_content() == "the weights"
    # the batch pictures have a bar for each batch asked for; the request's two a bar
    for svg in range(1, 3):
        ticks = page.locator(".calc-results svg").nth(svg).locator("text[text-anchor=middle]")
        assert ticks.all_text_contents()[:2] == ["1", "32"]
    assert figures.nth(2).locator("rect.calc-given").count() == 2
    assert figures.nth(2).locator("rect.calc-new").count() == 2
    # the chip's figures in the list, and its source linked, as the chips table has them
    code, out, _ = cli("chips", "--json")
    row = next(c for c in json.loads(out) if c["key"] == "h100-sxm")
    assert page.get_attribute("#calc-chip-about a", "href") == row["source"]
    assert row["note"] in page.inner_text("#calc-chip-about")
    assert row["name"] in page.locator("#calc-chip-name option:checked").inner_text()
    screenshot(page, ARTIFACTS / "calculator_1280.png")
    reset(tab)


def test_int4_weights_and_an_fp8_cache_fit_mixtral_on_an_l40s(tab):
    reset(tab)
    choose(tab, "mixtral-8x7b")
    tab.page.check("#calc-chip-named")
    tab.page.select_option("#calc-chip-name", "l40s")
    assert tab.compute() == "computed"
    published = shown_like_the_command_line(tab, "report", "mixtral-8x7b", "--chip", "l40s")
    assert not published["weights_fit"] and not published["throughput"]
    _, text, _ = cli("report", "mixtral-8x7b", "--chip", "l40s")
    needs = next(line for line in text.splitlines() if line.startswith("Chips for"))
    warning = tab.page.locator(".calc-results li.calc-warning").all_inner_texts()
    assert any(" ".join(w.split()) == " ".join(needs.split()) for w in warning), warning
    assert tab.page.locator(".calc-results svg").count() == 1     # memory, and no speed
    caption = tab.page.inner_text(".calc-results figcaption")
    assert f"{published['chips_for_weights']} chips of this kind" in caption
    tab.page.select_option("#calc-weights", "int4")
    tab.page.select_option("#calc-kv", "fp8")
    assert tab.compute() == "computed"
    packed = shown_like_the_command_line(
        tab, "report", "mixtral-8x7b", "--chip", "l40s", "--weights", "int4",
        "--kv-dtype", "fp8")
    assert packed["weights_fit"] and packed["throughput"]
    assert tab.page.locator(".calc-results svg").count() == 3     # memory; tokens, wait
    assert not tab.page.locator(".calc-results li.calc-warning").count()
    reset(tab)


def test_a_batch_of_0_is_answered_beside_its_field(tab):
    reset(tab)
    choose(tab, "llama-3-8b")
    tab.page.fill("#calc-batch", "0")
    assert tab.compute() == "error"
    note = refused_beside(tab, ["#calc-batch"],
                          ("report", "llama-3-8b", "--accelerator", "example", "--batch", "0"))
    assert "between 1 and" in note, note   # the values it takes
    reset(tab)


def test_a_list_ending_in_a_comma_is_the_list(tab):
    reset(tab)
    choose(tab, "llama-3-8b")
    tab.page.fill("#calc-context", "4096,")
    assert tab.compute() == "computed", tab.page.inner_text(".calc-status")
    code, out, _ = cli("report", "llama-3-8b", "--accelerator", "example", "--context", "4096",
                       "--json")
    assert tab.page.evaluate("window.bookCalculator.report") == json.loads(out)
    reset(tab)


def test_a_prompt_without_its_answer_marks_both(tab):
    reset(tab)
    choose(tab, "llama-3-8b")
    tab.page.fill("#calc-prompt", "2000")
    assert tab.compute() == "error"
    note = refused_beside(tab, ["#calc-prompt", "#calc-answer"],
                          ("report", "llama-3-8b", "--prompt", "2000"))
    assert "give both or neither" in note and "“Its answer (tokens)”" in note, note
    reset(tab)


def test_a_split_over_eight_chips_gives_the_command_lines_numbers(tab):
    """Llama-3-70B cut over the eight H100s of one machine (tensor parallel), and a cut
    that does not divide its heads, refused in the command line's one line."""
    reset(tab)
    choose(tab, "llama-3-70b")
    tab.page.check("#calc-chip-named")
    tab.page.select_option("#calc-chip-name", "h100-sxm")
    tab.page.fill("#calc-tp", "8")
    tab.page.fill("#calc-context", "8192")
    assert tab.compute() == "computed", tab.page.inner_text(".calc-status")
    expected = shown_like_the_command_line(
        tab, "report", "llama-3-70b", "--chip", "h100-sxm", "--tp", "8", "--context", "8192"
    )
    assert expected["split"]["split"]["tp"] == 8 and expected["split"]["decode"]
    assert expected["scope"] == "split" and expected["weights_fit"]  # about the split
    bars = tab.page.locator(".calc-results svg").first.locator("title").all_text_contents()
    assert "a device's weights" in bars, bars  # the memory picture is a device's
    assert "one such chip" not in tab.page.inner_text(".calc-results")
    tab.page.fill("#calc-tp", "3")
    assert tab.compute() == "error"
    note = refused_beside(tab, ["#calc-tp"], ("report", "llama-3-70b", "--chip", "h100-sxm",
                                              "--tp", "3", "--context", "8192"))
    assert "that divide this model: 2, 4, 8, 16, 32 or 64" in note, note  # the values it takes
    tab.page.locator(".calc-split").screenshot(path=str(ARTIFACTS / "calculator_refused.png"))
    reset(tab)


def test_a_training_split_lays_out_every_table(tab):
    """Llama-3-70B trained over 64 chips: the split's tables (after its note that 64 chips are
    more than one machine) are tables, as every table of the command line's text is."""
    reset(tab)
    page = tab.page
    choose(tab, "llama-3-70b")
    page.check("#calc-chip-named")
    page.select_option("#calc-chip-name", "h100-sxm")
    page.check("#calc-command-train")
    for field, value in {"#calc-tp": "8", "#calc-pp": "4", "#calc-devices": "2",
                         "#calc-train-batch": "8"}.items():
        page.fill(field, value)
    page.evaluate("document.querySelector('.calc-more').open = true")
    page.fill("#calc-micro", "8")
    assert tab.compute() == "computed", page.inner_text(".calc-status")
    argv = ("train", "llama-3-70b", "--chip", "h100-sxm", "--tp", "8", "--pp", "4", "--batch", "8",
            "--devices", "2", "--micro-batches", "8")
    shown_like_the_command_line(tab, *argv)
    _, text, _ = cli(*argv)
    tables = sum(1 for line in text.splitlines() if re.fullmatch(r"\s*-+(\s+-+)*\s*", line))
    assert page.locator(".calc-results .calc-table").count() == tables == 3
    titles = page.locator(".calc-table-title").all_inner_texts()
    assert any(t.startswith("Split over 64 devices") for t in titles), titles
    page.fill("#calc-micro", "3")
    assert tab.compute() == "error"
    note = refused_beside(tab, ["#calc-micro"], argv[:-1] + ("3",))
    assert "it takes one of 1, 2, 4, 8" in note, note
    reset(tab)


def test_the_train_mode_gives_the_train_commands_numbers(tab):
    reset(tab)
    page = tab.page
    choose(tab, "llama-3-8b")
    page.check("#calc-chip-named")
    page.select_option("#calc-chip-name", "h100-sxm")
    page.check("#calc-command-train")
    assert page.locator("#calc-lora-rank").is_visible()
    assert page.locator("#calc-context").is_hidden() and page.locator("#calc-kv").is_hidden()
    page.fill("#calc-lora-rank", "16")
    page.select_option("#calc-weights", "nf4")
    page.select_option("#calc-zero", "2")
    page.fill("#calc-devices", "8")
    page.fill("#calc-train-batch", "4")
    assert tab.compute() == "computed", page.inner_text(".calc-status")
    expected = shown_like_the_command_line(
        tab, "train", "llama-3-8b", "--chip", "h100-sxm", "--batch", "4",
        "--zero-stage", "2", "--devices", "8", "--lora-rank", "16", "--weights", "nf4")
    assert expected["training"]["lora"] and expected["training"]["zero_stage"] == 2
    parts = page.locator(".calc-results svg rect.calc-bar title").all_text_contents()
    assert parts == [name for name, b in expected["memory"].items() if b > 0], parts
    reset(tab)
    assert page.locator("#calc-context").is_visible()


def test_it_fits_a_phone(tab):
    page = tab.page
    reset(tab)
    page.set_viewport_size({"width": 390, "height": 900})
    try:
        ask_the_request(tab)
        page.evaluate("document.querySelector('.calc-more').open = true")
        page.wait_for_function(  # the pictures are redrawn for the narrower column
            "() => [...document.querySelectorAll('.calc-results svg')].every("
            "s => s.getBoundingClientRect().right <= window.innerWidth)", timeout=10_000)
        wide = page.evaluate("""[...document.querySelectorAll('.calc *')]
            .filter(e => e.checkVisibility() && !e.closest('.calc-scroll'))
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
            .map(e => e.tagName + '.' + e.className)""")
        assert not wide, f"wider than a 390 px screen: {wide[:5]}"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        cut = page.evaluate("""(() => {   // every chip's name reads whole in the closed list
            const list = document.querySelector('#calc-chip-name'), style = getComputedStyle(list);
            const pen = document.createElement('canvas').getContext('2d');
            pen.font = style.font;
            const room = list.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 24;
            return [...list.options].filter(o => pen.measureText(o.text).width > room).map(o => o.text);
        })()""")
        assert not cut, f"chips whose names are cut off in the list at 390 px: {cut}"
        screenshot(page, ARTIFACTS / "calculator_390.png")
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})
        reset(tab)


def test_only_its_page_loads_it(site):
    """The script and style are on the calculator's page alone; the runtime is fetched
    by that script's worker, never by a page itself."""
    holding = sorted(str(p.relative_to(site)) for p in site.rglob("*.html")
                     if "calculator/calculator.js" in p.read_text())
    assert holding == [f"{PAGE}.html"], holding
    assert not [p for p in site.rglob("*.html") if "_static/pyodide" in p.read_text()]


def test_without_webassembly_the_page_says_so_and_keeps_the_example(browser):
    t = Tab(browser, browser[1], init_script="delete window.WebAssembly;")
    try:
        t.open(PAGE, "#calculator-form", wait="domcontentloaded")
        assert t.wait_for("unavailable") == "unavailable"
        assert "WebAssembly" in t.page.inner_text(".calc-status")
        assert "8,030,261,248" in t.page.inner_text(".calc-results")  # the build's example
        assert t.page.locator("button.calc-compute").is_disabled()
        assert not [u for u in t.requests if "pyodide" in u]
        assert not t.errors and not t.outside()
    finally:
        t.close()


def visible(tab: Tab, *fields: str) -> list[bool]:
    return [tab.page.locator(f).is_visible() for f in fields]


PLAN_TRAINING = {"#calc-chips": "8", "#calc-seq-len": "8192", "#calc-global-batch": "512",
                 "#calc-tokens": "1000000000000", "#calc-formats": "bf16,fp8",
                 "#calc-price": "2.5"}
PLAN_TRAINING_ARGV = ("plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8",
                      "--seq-len", "8192", "--global-batch", "512", "--tokens",
                      "1000000000000", "--formats", "bf16,fp8", "--price", "2.5")


def test_the_plan_mode_ranks_a_training_runs_plans_as_the_command_line(tab):
    """A third mode: plan, on a chip chosen by name and how many; its fields are its goal's
    (the sequence length and tokens shared with train), and its plans the command line's."""
    reset(tab)
    page = tab.page
    choose(tab, "llama-3-8b")
    page.select_option("#calc-chip-name", "h100-sxm")
    page.check("#calc-command-plan")
    assert visible(tab, "#calc-goal-training", "#calc-chips", "#calc-seq-len",
                   "#calc-global-batch", "#calc-tokens", "#calc-optimizer",
                   "#calc-formats", "#calc-price", "#calc-pue", "#calc-chip-name") == [True] * 10
    assert visible(tab, "#calc-chip-example", "#calc-chip-own", "#calc-tp", "#calc-context",
                   "#calc-prompt", "#calc-train-batch", "#calc-lora-rank", "#calc-weights",
                   "#calc-kv", "#calc-draft") == [False] * 10
    for field, value in PLAN_TRAINING.items():
        page.fill(field, value)
    assert tab.compute() == "computed", page.inner_text(".calc-status")
    expected = shown_like_the_command_line(tab, *PLAN_TRAINING_ARGV)
    assert expected["plans"] and expected["price_per_chip_hour"] == 2.5
    assert {p["weights"] for p in expected["plans"]} == {"bf16", "fp8"}
    assert page.locator(".calc-results li").first.inner_text().startswith(
        "Plans for llama-3-8b on 8 x")
    heads = page.locator(".calc-results li.calc-plan .calc-plan-head").all_inner_texts()
    assert heads and [h.split()[0] for h in heads] == [f"#{i}" for i in range(1, 6)], heads
    assert page.locator(".calc-results li.calc-plan").first.inner_text().count(
        "estimated: floor") == 1
    assert "8 x NVIDIA H100 SXM" in page.inner_text(".calc-status")
    screenshot(page, ARTIFACTS / "calculator_plan_1280.png")
    # a goal given in part: the fields it lacks are marked, in the form's words
    page.fill("#calc-seq-len", "")
    page.fill("#calc-global-batch", "")
    assert tab.compute() == "error"
    note = refused_beside(tab, ["#calc-seq-len", "#calc-global-batch"], None)
    assert "plan also needs “Tokens a sequence”, “Sequences a step" in note, note
    # how many chips, refused beside its own field with the values it takes
    page.fill("#calc-seq-len", "8192")
    page.fill("#calc-global-batch", "512")
    page.fill("#calc-chips", "0")
    assert tab.compute() == "error"
    argv = list(PLAN_TRAINING_ARGV)
    argv[argv.index("--chips") + 1] = "0"
    note = refused_beside(tab, ["#calc-chips"], tuple(argv))
    assert note.startswith("How many chips: ") and "between 1 and 4,096" in note, note
    reset(tab)


PLAN_SERVING = {"#calc-prompt": "2000", "#calc-answer": "500", "#calc-request-rate": "20",
                "#calc-ttft": "1000", "#calc-tpot": "50"}
PLAN_SERVING_ARGV = ("plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8",
                     "--prompt", "2000", "--answer", "500", "--rate", "20", "--ttft-ms",
                     "1000", "--tpot-ms", "50")


def test_the_plan_mode_ranks_a_services_plans_as_the_command_line(tab):
    reset(tab)
    page = tab.page
    choose(tab, "llama-3-8b")
    page.select_option("#calc-chip-name", "h100-sxm")
    page.check("#calc-command-plan")
    page.check("#calc-goal-serving")
    assert visible(tab, "#calc-prompt", "#calc-answer", "#calc-request-rate", "#calc-ttft",
                   "#calc-tpot", "#calc-aggregated", "#calc-kv") == [True] * 7
    assert visible(tab, "#calc-context", "#calc-batch", "#calc-seq-len",
                   "#calc-global-batch", "#calc-tokens") == [False] * 5
    page.fill("#calc-chips", "8")
    for field, value in PLAN_SERVING.items():
        page.fill(field, value)
    assert tab.compute() == "computed", page.inner_text(".calc-status")
    expected = shown_like_the_command_line(tab, *PLAN_SERVING_ARGV)
    assert {p["kind"] for p in expected["plans"]} == {"aggregated", "disaggregated"}
    page.select_option("#calc-kv", "fp8")
    page.check("#calc-aggregated")
    page.fill("#calc-pue", "1.2")
    assert tab.compute() == "computed", page.inner_text(".calc-status")
    expected = shown_like_the_command_line(
        tab, *PLAN_SERVING_ARGV, "--no-disaggregated", "--kv-dtype", "fp8", "--pue", "1.2")
    assert {p["kind"] for p in expected["plans"]} == {"aggregated"}
    # the report mode takes the prompt and answer it shares with the service, and no more
    page.check("#calc-command-report")
    assert visible(tab, "#calc-context", "#calc-prompt", "#calc-request-rate") == [True, True, False]
    reset(tab)


def test_a_price_a_pue_and_a_draft_give_the_command_lines_money_and_speculation(tab):
    reset(tab)
    page = tab.page
    choose(tab, "llama-3-8b")
    page.check("#calc-chip-named")
    page.select_option("#calc-chip-name", "h100-sxm")
    page.fill("#calc-context", "8192")
    page.fill("#calc-price", "2.5")
    page.fill("#calc-pue", "1.2")
    page.select_option("#calc-draft", "gated-gqa-1b")
    page.fill("#calc-draft-tokens", "5")
    page.fill("#calc-acceptance", "0.8")
    assert tab.compute() == "computed", page.inner_text(".calc-status")
    expected = shown_like_the_command_line(
        tab, "report", "llama-3-8b", "--chip", "h100-sxm", "--context", "8192",
        "--price", "2.5", "--pue", "1.2", "--draft", "gated-gqa-1b", "--draft-tokens", "5",
        "--acceptance", "0.8")
    assert expected["running_costs"]["rows"] and expected["speculative"]["rows"]
    titles = page.locator(".calc-table-title").all_inner_texts()
    assert any(t.startswith("Money and energy a million tokens") for t in titles), titles
    assert any(t.startswith("Speculative decoding with gated-gqa-1b") for t in titles), titles
    # under a split the draft is refused, beside its field, in the command line's words
    page.fill("#calc-tp", "2")
    assert tab.compute() == "error"
    refused_beside(tab, ["#calc-draft"], (
        "report", "llama-3-8b", "--chip", "h100-sxm", "--tp", "2", "--context", "8192",
        "--price", "2.5", "--pue", "1.2", "--draft", "gated-gqa-1b", "--draft-tokens", "5",
        "--acceptance", "0.8"))
    # train takes the price and the PUE, and no draft
    page.fill("#calc-tp", "")
    page.check("#calc-command-train")
    assert visible(tab, "#calc-price", "#calc-draft") == [True, False]
    assert tab.compute() == "computed", page.inner_text(".calc-status")
    expected = shown_like_the_command_line(
        tab, "train", "llama-3-8b", "--chip", "h100-sxm", "--price", "2.5", "--pue", "1.2")
    assert expected["running_costs"]["dollars_at_least"] > 0
    reset(tab)
