"""The published site works: a clean warnings-as-errors build, opened page by page in headless Chromium.

Every page is served over loopback HTTP and loaded in Debian's Chromium (driven by
Playwright's Python client; no browser is downloaded; every outside address is cut by the
browser's resolver and every request is watched). For each page: no console errors, every
image loads and has alt text, math is typeset by the MathJax shipped inside the site (no
network), every internal link and anchor resolves, no id is used twice, the number of figures
equals the number the notebook glues, one search box, and the download menu offers the library
and the source. Then the same page at 390 px, a phone: no figure letter below a readable size
(measured from the letters in the SVG file and the width the page gives it), a figure wider than
its box says so, and no equation cut off without a cue. Also: dark mode keeps text readable,
citations carry the bibliography's own labels and land below the sticky header, search quotes
prose over file://, every page stays under 1.5 MB, and the download route works: the wheel
installs with no network into a fresh environment and runs a downloaded notebook. Screenshots of
a few pages, at both widths, go to test-artifacts/.
"""
from __future__ import annotations

import ast
import functools
import html
import http.server
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import tarfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest
import yaml
from PIL import Image, ImageChops

from book_files import BOOK, ROOT, paired_notebooks
from book_machinery.myst_plugin import READABLE_PX
from book_machinery.sphinx_downloads import TORCH_CPU_INDEX, gigabytes
from book_machinery.sphinx_print import pdf_name

pytestmark = [pytest.mark.site, pytest.mark.slow(seconds=60)]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ["intro", "chapters/training/04_kv_cache", "chapters/why_won/04_cutting_the_cost"]
PHONE = 390          # CSS pixels: a phone held upright
MAX_PAGE = 1.5e6     # bytes a page and its pictures may weigh
RESOLVER = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"
NO_CUE = ("none", "normal", '""')  # a ::before with nothing to say


PDF_STAND_IN = b"%PDF-1.4\n% a stand-in for the whole book as make pdf prints it\n%%EOF\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Build the whole book, every page, failing on any warning, as it is once `make pdf` has
    printed the book (a stand-in PDF where make pdf writes it: the site then offers it).
    BOOK_SITE_BUILT=DIR reuses DIR/_build/html, built so before, for a quick second run."""
    if os.environ.get("BOOK_SITE_BUILT"):
        return Path(os.environ["BOOK_SITE_BUILT"]) / "_build" / "html"
    out = tmp_path_factory.mktemp("site")
    printed = out / "_build" / "pdf" / pdf_name(yaml.safe_load((BOOK / "_config.yml").read_text())["title"])
    printed.parent.mkdir(parents=True)
    printed.write_bytes(PDF_STAND_IN)
    jb = Path(sys.executable).with_name("jupyter-book")
    run = subprocess.run(
        [str(jb), "build", "--all", "-W", "-n", "--keep-going", str(BOOK), "--path-output", str(out)],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, f"the build failed or warned:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    return out / "_build" / "html"


def test_the_build_is_clean(site):
    assert (site / "index.html").exists() and (site / "intro.html").exists()


def pages(site: Path) -> list[str]:
    """Every page in the contents, as a path relative to the site without .html."""
    docs = ["intro"]
    for line in (BOOK / "_toc.yml").read_text().splitlines():
        if "file:" in line:
            docs.append(line.split("file:")[1].strip())
    return docs


PHONE_PROBE = """(() => {
  const box = document.querySelector('article').getBoundingClientRect();
  const figures = [...document.querySelectorAll('article figure img')].map(img => {
    const fig = img.closest('figure'), link = img.closest('a');
    const cap = fig.querySelector('figcaption');
    return {src: img.getAttribute('src'), shown: img.getBoundingClientRect().width,
            room: (link || fig).clientWidth,
            hint: cap ? getComputedStyle(cap, '::before').content : 'none',
            link: link ? link.getAttribute('href') : null};
  });
  const equations = [...document.querySelectorAll('mjx-container[display="true"]')].map(m => {
    const style = getComputedStyle(m), r = m.getBoundingClientRect();
    return {wide: m.scrollWidth > m.clientWidth + 1, scrolls: ['auto', 'scroll'].includes(style.overflowX),
            cue: style.backgroundImage.includes('gradient'), cut: r.right > box.right + 1,
            text: m.getAttribute('aria-label') || m.textContent.slice(0, 40)};
  });
  const cue = (e) => getComputedStyle(e, '::before').content;
  const outputs = [...document.querySelectorAll('article div.cell_output pre')]
    .filter(p => p.checkVisibility() && p.innerText.trim()).map(p => ({
      wraps: !['pre', 'nowrap'].includes(getComputedStyle(p).whiteSpace),
      wide: p.scrollWidth > p.clientWidth + 1, cue: cue(p.closest('div.output') || p.parentElement),
      line: p.innerText.split('\\n')[0].slice(0, 50)}));
  const tables = [...document.querySelectorAll('article table')].filter(t => t.checkVisibility()).map(t => {
    const scroller = t.closest('.pst-scrollable-table-container, .calc-scroll');
    return {boxed: Boolean(scroller), wide: scroller ? scroller.scrollWidth > scroller.clientWidth + 1
              : t.getBoundingClientRect().right > box.right + 1,
            cue: scroller ? cue(scroller) : 'none', head: t.innerText.slice(0, 50),
            numbered: Boolean(t.querySelector(':scope > caption .caption-number')),
            form: Boolean(t.closest('.calc'))};
  });
  return {figures, equations, outputs, tables,
          page_wider: document.documentElement.scrollWidth > window.innerWidth + 1};
})()"""


@pytest.fixture(scope="module")
def browsed(site):
    """Load every page in headless Chromium over loopback HTTP; return what each page showed."""
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed: `apt-get install -y chromium` (.ci/run does this)")
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    ARTIFACTS.mkdir(exist_ok=True)
    results = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", RESOLVER])
            page = browser.new_page(viewport={"width": 1440, "height": 1600})
            outside, errors = [], []
            page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            # Every request is seen by a listener; the outside network is cut by the browser's own
            # resolver (intercepting each request through Playwright would add a third to the run).
            page.on("request", lambda request: None if request.url.startswith((base, "data:"))
                    else outside.append(request.url))
            for doc in pages(site):
                errors.clear()
                outside.clear()
                page.goto(base + doc + ".html", wait_until="load")  # images are in by then
                if page.locator(".math").count():
                    page.wait_for_function("document.querySelectorAll('mjx-container').length > 0", timeout=15000)
                results[doc] = {
                    "errors": list(errors),
                    "outside": list(outside),
                    "images": page.evaluate("""[...document.querySelectorAll('article img')].map(i => (
                        {src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0, alt: i.alt}))"""),
                    "figures": page.locator("article figure img").count(),
                    "math": page.locator(".math").count(),
                    "typeset": page.locator("mjx-container").count(),
                    "links": page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"),
                    "ids": page.evaluate("[...document.querySelectorAll('[id]')].map(e => e.id)"),
                    "url": page.url,
                    "overflowing_code": page.evaluate("""[...document.querySelectorAll('div.cell_input pre')]
                        .filter(e => e.checkVisibility() && e.innerText.trim() && e.scrollWidth > e.clientWidth + 1)
                        .map(e => e.innerText.split('\\n')[0])"""),
                    "citations": page.evaluate("""[...document.querySelectorAll('span.bibtex-citation a')]
                        .map(a => a.href)"""),
                    "toggles": page.locator("details.hide.above-input").count(),
                    "solutions": page.locator("div.solution.dropdown").count(),
                    "search_boxes": page.evaluate("""[...document.querySelectorAll('.search-button-field, form.bd-search')]
                        .filter(e => e.checkVisibility()).length"""),
                    "downloads": page.evaluate("""[...document.querySelectorAll('.dropdown-download-buttons a')]
                        .map(a => a.href)"""),
                    "download_items": page.evaluate("""[...document.querySelectorAll('.dropdown-download-buttons li')]
                        .map(li => li.innerText.trim())"""),
                    "cited": page.evaluate("""[...document.querySelectorAll('span.bibtex-citation')].map(s => ({
                        text: s.textContent.replace(/\\s+/g, ' ').trim(),
                        links: [...s.querySelectorAll('a')].map(a => [a.textContent.replace(/\\s+/g, ' ').trim(), a.href])}))"""),
                    "labels": page.evaluate("""Object.fromEntries([...document.querySelectorAll('div.citation')].map(d =>
                        [d.id, d.querySelector('.label').textContent.replace(/^\\[|\\]$/g, '').trim()]))"""),
                    "backlinks": page.evaluate("""[...document.querySelectorAll('p.book-cited-in a')].map(a => a.href)"""),
                    "glossary": page.evaluate("""[...document.querySelectorAll('dl.glossary > dt')].map(dt => ({
                        id: dt.id, term: dt.textContent.replace(/#$/, '').trim(),
                        back: [...(dt.nextElementSibling || dt).querySelectorAll('p.book-explained-in a')]
                          .map(a => a.href)}))"""),
                    "term_links": page.evaluate("""[...document.querySelectorAll('a[href*="glossary.html#term-"]')]
                        .map(a => a.href.split('#')[1])"""),
                }
                opened = {k for r in results.values() for k in ("toggle_opens", "solution_opens") if k in r}
                if results[doc]["toggles"] and "toggle_opens" not in opened:   # one page shows the toggles work
                    toggle = page.locator("details.hide.above-input").first
                    toggle.locator("summary").click()
                    results[doc]["toggle_opens"] = toggle.locator("div.cell_input").first.is_visible()
                if results[doc]["solutions"] and "solution_opens" not in opened:   # and one the solutions
                    solution = page.locator("div.solution.dropdown").first
                    solution.locator(".admonition-title").click()
                    page.wait_for_timeout(100)
                    results[doc]["solution_opens"] = solution.locator("section").first.is_visible()
                if doc in SCREENSHOTS:
                    page.screenshot(path=str(ARTIFACTS / (doc.replace("/", "__") + ".png")), full_page=False)
                # the same page on a phone: the layout follows the new width without a reload
                page.set_viewport_size({"width": PHONE, "height": 844})
                page.wait_for_timeout(80)  # the scroll cues follow the new width (book-scroll.js)
                results[doc]["phone"] = page.evaluate(PHONE_PROBE)
                if doc in SCREENSHOTS:
                    page.screenshot(path=str(ARTIFACTS / (doc.replace("/", "__") + f"__{PHONE}.png")),
                                    full_page=True)
                page.set_viewport_size({"width": 1440, "height": 1600})
            browser.close()
    finally:
        server.shutdown()
    return results


def test_no_console_errors_and_nothing_fetched_from_outside(browsed):
    bad = {doc: r["errors"] for doc, r in browsed.items() if r["errors"]}
    assert not bad, f"console errors: {bad}"
    outside = {doc: r["outside"] for doc, r in browsed.items() if r["outside"]}
    assert not outside, f"pages asked the network for: {outside}"


def test_every_image_loads_and_has_alt_text(browsed):
    broken = [(doc, i["src"]) for doc, r in browsed.items() for i in r["images"] if not i["ok"]]
    assert not broken, f"images that did not load: {broken}"
    no_alt = [(doc, i["src"]) for doc, r in browsed.items() for i in r["images"] if not i["alt"].strip()]
    assert not no_alt, f"images without alt text: {no_alt}"


def test_math_is_typeset_offline(browsed):
    untypeset = [doc for doc, r in browsed.items() if r["math"] and r["typeset"] == 0]
    assert not untypeset, f"math left as TeX on: {untypeset}"
    assert any(r["typeset"] for r in browsed.values()), "no page typeset any math"


def test_every_internal_link_resolves(browsed):
    ids = {urldefrag(r["url"])[0]: set(r["ids"]) for r in browsed.values()}
    missing = []
    for doc, r in browsed.items():
        for href in r["links"]:
            url, anchor = urldefrag(href)
            if urlparse(url).hostname != "127.0.0.1":
                continue
            path = urlparse(url).path
            if path.endswith(".html") and url not in ids:
                missing.append((doc, href))  # a page outside the contents: check it exists on disk
            elif anchor and url in ids and anchor not in ids[url]:
                missing.append((doc, href))
    assert not [m for m in missing if not m[1].split("#")[0].endswith(("genindex.html", "search.html"))], missing


def test_folded_code_and_solutions_open(browsed):
    assert any(r["toggles"] for r in browsed.values()), "no folded code cell on any page"
    assert any(r["solutions"] for r in browsed.values()), "no solution on any page"
    closed = [doc for doc, r in browsed.items() if r.get("toggle_opens") is False]
    assert not closed, f"a 'show code' toggle did not open on: {closed}"
    closed = [doc for doc, r in browsed.items() if r.get("solution_opens") is False]
    assert not closed, f"a solution did not open on: {closed}"


def test_no_visible_code_overflows_its_box(browsed):
    over = {doc: r["overflowing_code"] for doc, r in browsed.items() if r["overflowing_code"]}
    assert not over, f"code cut off at the right edge of its box (first line of each cell): {over}"


def test_citations_link_to_the_bibliography(browsed):
    links = [href for r in browsed.values() for href in r["citations"]]
    assert links, "no page cites anything"
    bib = next(urldefrag(r["url"])[0] for doc, r in browsed.items() if doc == "bibliography")
    ids = set(browsed["bibliography"]["ids"])
    wrong = [href for href in links if urldefrag(href)[0] != bib or urldefrag(href)[1] not in ids]
    assert not wrong, f"citations that do not land on an entry of the bibliography: {wrong[:10]}"


def test_figure_count_matches_the_notebooks(browsed):
    for md in paired_notebooks():
        nb = json.loads(md.with_suffix(".ipynb").read_text())
        glued = {o["metadata"]["scrapbook"]["name"] for c in nb["cells"] for o in c.get("outputs", [])
                 if {"image/svg+xml", "image/png"} & set(o.get("data", {})) and "scrapbook" in o.get("metadata", {})}
        doc = str(md.relative_to(BOOK).with_suffix(""))
        assert browsed[doc]["figures"] == len(glued), f"{doc}: {browsed[doc]['figures']} figures shown, {len(glued)} glued"


def test_no_id_is_used_twice_on_a_page(browsed):
    twice = {doc: sorted({i for i in r["ids"] if r["ids"].count(i) > 1}) for doc, r in browsed.items()}
    twice = {doc: ids for doc, ids in twice.items() if ids}
    assert not twice, f"ids used more than once: {twice}"


def test_one_search_box_and_the_downloads_in_every_header(browsed, site):
    boxes = {doc: r["search_boxes"] for doc, r in browsed.items() if r["search_boxes"] != 1}
    assert not boxes, f"pages showing other than one search box at 1440 px: {boxes}"
    wheel = next((site / "_downloads").glob("*.whl"))
    archive = next((site / "_downloads").glob("*-source.tar.gz"))
    missing = {doc: r["downloads"] for doc, r in browsed.items()
               if not any(unquote(h).endswith("_downloads/" + wheel.name) for h in r["downloads"])
               or not any(unquote(h).endswith("_downloads/" + archive.name) for h in r["downloads"])}
    assert not missing, f"pages whose download menu lacks the wheel or the source: {sorted(missing)}"
    intro = " ".join(browsed["intro"]["links"])
    assert wheel.name in intro and archive.name in intro, "the landing page does not link both downloads"
    landing = html.unescape(re.sub(r"<[^>]+>", "", (site / "intro.html").read_text()))
    assert f"pip install torch --index-url {TORCH_CPU_INDEX}" in landing, "the landing page does not take PyTorch's CPU build"
    assert f"about {gigabytes('cpu')}" in landing and f"about {gigabytes('pypi')}" in landing


def test_the_print_item_says_what_it_prints_and_the_book_pdf_is_offered(browsed, site):
    """The theme's ".pdf" item prints the page in view: it is named so. The whole book's PDF,
    once make pdf has printed it, is in every download menu and on the landing page."""
    pdf = site / "_downloads" / pdf_name(yaml.safe_load((BOOK / "_config.yml").read_text())["title"])
    assert pdf.read_bytes() == PDF_STAND_IN, "the site did not copy the printed book"
    for doc, r in browsed.items():
        assert "print this page" in r["download_items"] and ".pdf" not in r["download_items"], (
            doc, r["download_items"])
        assert any(unquote(h).endswith("_downloads/" + pdf.name) for h in r["downloads"]), (
            f"{doc}: the download menu does not offer the whole book's PDF")
    assert pdf.name in " ".join(browsed["intro"]["links"]), "the landing page does not list the book's PDF"


def svg_letters(svg: Path) -> tuple[float, float]:
    """(width, smallest letter) of an SVG figure in points: matplotlib draws each text as glyph outlines
    scaled by size/100, so the sizes are read from the drawing itself, not from the page's metadata."""
    text = svg.read_text()
    width = float(re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', text)[1])
    sizes = [100 * float(m) for m in re.findall(r'<g id="text_\d+">\s*(?:<!--.*?-->\s*)?<g transform="[^"]*scale\(([0-9.]+) -', text, re.S)]
    return width, min(sizes) if sizes else float("inf")


def test_every_figure_reads_on_a_phone(browsed, site):
    small, unsaid, unlinked, checked = [], [], [], 0
    for doc, r in browsed.items():
        page = site / f"{doc}.html"
        for f in r["phone"]["figures"]:
            path = (page.parent / f["src"]).resolve()
            if path.suffix != ".svg":
                continue      # a PNG figure (the measured page until `make measure`) has no letters to read
            width_pt, smallest_pt = svg_letters(path)
            px = smallest_pt * f["shown"] / width_pt
            checked += 1
            if px < READABLE_PX - 0.05:
                small.append((doc, path.name[:12], round(px, 1)))
            if f["shown"] > f["room"] + 1 and f["hint"] in NO_CUE:
                unsaid.append((doc, path.name[:12]))
            if not f["link"] or not f["link"].endswith(path.name):
                unlinked.append((doc, path.name[:12]))
    assert checked > 40, f"only {checked} SVG figures measured"
    assert not small, f"figures whose smallest letters are under {READABLE_PX} px at {PHONE} px: {small}"
    assert not unsaid, f"figures wider than their box with no word that they scroll: {unsaid}"
    assert not unlinked, f"figures a tap does not open full size: {unlinked}"
    wide = [doc for doc, r in browsed.items() if r["phone"]["page_wider"]]
    assert not wide, f"pages wider than a {PHONE} px screen (the whole page scrolls sideways): {wide}"


def test_no_equation_is_cut_without_a_cue_on_a_phone(browsed):
    bad = [(doc, e["text"]) for doc, r in browsed.items() for e in r["phone"]["equations"]
           if e["cut"] or (e["wide"] and not (e["scrolls"] and e["cue"]))]
    assert not bad, f"equations cut off at {PHONE} px, or scrolling with nothing to show it: {bad[:10]}"
    assert any(e["wide"] for r in browsed.values() for e in r["phone"]["equations"]), (
        "no equation is wider than a phone: the cue is not exercised")


def test_printed_outputs_keep_their_lines_and_say_when_they_scroll_on_a_phone(browsed):
    """A printed table's line never wraps (its columns would fall apart); an output wider than
    a phone scrolls sideways and says so above it."""
    outputs = [(doc, o) for doc, r in browsed.items() for o in r["phone"]["outputs"]]
    assert len(outputs) > 100, f"only {len(outputs)} printed outputs seen"
    wrapped = [(doc, o["line"]) for doc, o in outputs if o["wraps"]]
    assert not wrapped, f"printed outputs whose lines wrap at {PHONE} px: {wrapped[:10]}"
    unsaid = [(doc, o["line"]) for doc, o in outputs if o["wide"] and o["cue"] in NO_CUE]
    assert not unsaid, f"outputs wider than a phone with no word that they scroll: {unsaid[:10]}"
    assert any(o["wide"] for _, o in outputs), "no output is wider than a phone: the cue is not exercised"
    false_cue = [(doc, o["line"]) for doc, o in outputs if not o["wide"] and o["cue"] not in NO_CUE]
    assert not false_cue, f"outputs that fit but say they scroll: {false_cue[:10]}"


def test_a_table_wider_than_a_phone_says_it_scrolls(browsed):
    tables = [(doc, t) for doc, r in browsed.items() for t in r["phone"]["tables"]]
    assert tables, "no table on any page"
    cut = [(doc, t["head"]) for doc, t in tables if not t["boxed"] and t["wide"]]
    assert not cut, f"tables cut off at {PHONE} px: {cut[:10]}"
    unsaid = [(doc, t["head"]) for doc, t in tables if t["wide"] and t["cue"] in NO_CUE]
    assert not unsaid, f"tables wider than a phone with no word that they scroll: {unsaid[:10]}"
    assert any(t["wide"] for _, t in tables), "no table is wider than a phone: the cue is not exercised"


def test_the_appendixs_tables_carry_numbered_captions(browsed):
    """Tables are captioned as figures are ({table} with :name:, numbered by Sphinx); the
    appendix's are (the in-page calculator titles the tables of its report itself), and
    chapter authors caption theirs the same way (CONTRIBUTING.md)."""
    appendix = [(doc, t) for doc, r in browsed.items() if doc.startswith("chapters/appendix/")
                for t in r["phone"]["tables"] if not t["form"]]  # the form's report titles its own
    assert appendix, "no table in the appendix"
    bare = [(doc, t["head"]) for doc, t in appendix if not t["numbered"]]
    assert not bare, f"appendix tables without a numbered caption: {bare}"


def test_an_equation_that_fits_draws_no_mark_beside_it(site, browser):
    """The scroll shadows of a display equation show only while there is more to see: an equation
    that fits looks the same with its background removed, one much wider than a phone shows a
    shadow at its right edge, and on paper there is none."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})

    def marks(width: int, most: int) -> list[tuple[int, int]]:
        """For each display equation that fits (width 1280) or overflows a phone by more than 40 px
        (scrolled to its start): how much its background changes the 20 px at its left and its
        right edge (the largest change of a colour channel; text over an opaque box differs by a
        unit or two). A shadow is as wide as what is hidden, so a few pixels hide none."""
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(100)
        found = []
        for eq in page.locator('mjx-container[display="true"]').all():
            more = eq.evaluate("m => m.scrollWidth - m.clientWidth")
            if len(found) == most:
                break
            if not (more <= 0 if width != PHONE else more > 40) or not eq.is_visible():
                continue
            eq.scroll_into_view_if_needed()
            shots = []
            for background in ("", "none"):
                eq.evaluate(f"m => m.style.background = {background!r}")
                shots.append(Image.open(io.BytesIO(eq.screenshot())).convert("RGB"))
            eq.evaluate("m => m.style.background = ''")
            w, h = shots[0].size
            change = ImageChops.difference(*shots)
            found.append(tuple(max(change.crop(box).getextrema(), key=lambda e: e[1])[1]
                               for box in ((0, 0, 20, h), (w - 20, 0, w, h))))
        return found

    fitting, wide = [], []
    for doc in ("chapters/many_chips/index", "chapters/why_won/index", "chapters/training/03_teacher_forcing",
                "chapters/training/04_kv_cache"):
        page.goto((site / f"{doc}.html").as_uri())
        page.wait_for_function("document.querySelectorAll('mjx-container[display=\"true\"]').length > 0",
                               timeout=15000)
        fitting += marks(1280, 2 - len(fitting))
        wide += marks(PHONE, 2 - len(wide))
        if fitting and wide:
            break
    assert fitting and all(max(m) <= 3 for m in fitting), f"equations that fit draw marks beside them: {fitting}"
    assert wide and all(m[1] > 30 for m in wide), f"equations wider than a phone show no shadow at their edge: {wide}"
    page.emulate_media(media="print")
    printed = page.evaluate("""[...document.querySelectorAll('mjx-container[display="true"]')]
        .map(m => getComputedStyle(m).backgroundImage)""")
    assert set(printed) == {"none"}, f"equations print a background: {set(printed)}"
    page.close()


LAB_SECTION = "chapters/training/04_kv_cache"   # CONTRIBUTING's reference section
LAB_TOKEN = "book-site-test"
FIRST_GLUED = """root => {   // the first paragraph of prose with a glued value and no math
  const p = [...document.querySelectorAll(root + ' p')].find(p => p.querySelector('.pasted-text')
    && !p.closest('figure, .admonition, details, table') && !p.querySelector('.math, mjx-container'));
  if (!p) return null;
  const glued = [...p.querySelector('.pasted-text').classList].find(c => c.startsWith('book-glue-'));
  return {text: p.textContent.replace(/\\s+/g, ' ').trim(), key: glued ? glued.slice(10) : null};
}"""


@pytest.fixture
def lab(site, tmp_path):
    """JupyterLab as `make lab` starts it (the project's configuration layer, the book's Lab
    extension), on a copy of one section, with the references of this site's build; the app is
    exposed to the page, so a test can add and run a cell."""
    from book_machinery import lab as book_lab

    if not (book_lab.EXTENSIONS / "book-machinery-lab" / "package.json").exists():
        pytest.fail("the book's Lab extension is not built: run `make setup`")
    copy = tmp_path / "book"
    (copy / LAB_SECTION).parent.mkdir(parents=True)
    for suffix in (".md", ".ipynb"):
        shutil.copy2(BOOK / f"{LAB_SECTION}{suffix}", copy / f"{LAB_SECTION}{suffix}")
    shutil.copy2(BOOK / "jupytext.toml", copy / "jupytext.toml")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path / "home"
    env = {**book_lab.environment(), "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
           "BOOK_LAB_BOOK": str(copy), "BOOK_LAB_REFERENCES": str(site.parent / "book-references.json")}
    cmd = book_lab.command(["--no-browser", f"--port={port}", "--ip=127.0.0.1",
                            f"--IdentityProvider.token={LAB_TOKEN}", "--LabApp.expose_app_in_browser=True"],
                           folder=tmp_path)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "JupyterLab did not start"
            try:
                urllib.request.urlopen(f"{base}/api/status?token={LAB_TOKEN}", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.slow(seconds=25)
def test_a_sections_prose_in_jupyterlab_reads_as_on_the_site(site, browser, lab):
    """A reader editing the section in Lab reads its first glued sentence as the site prints it
    (the numbers of the notebook's outputs, the site's numbered references), and a cell run in
    Lab that glues a new value changes the sentence."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((site / f"{LAB_SECTION}.html").as_uri())
    on_site = page.evaluate(FIRST_GLUED, "article")
    assert on_site, f"{LAB_SECTION} has no glued sentence without math"
    outside = []
    page.on("request", lambda r: None if r.url.startswith((lab, lab.replace("http", "ws"), "data:", "blob:",
                                                           "file:")) else outside.append(r.url))
    page.goto(f"{lab}/lab/tree/book/{LAB_SECTION}.md?token={LAB_TOKEN}")
    page.wait_for_selector(".jp-MarkdownCell [data-book-prose=rendered] .pasted-text", timeout=90_000)
    in_lab = page.evaluate(FIRST_GLUED, ".jp-Notebook")
    assert in_lab and in_lab["text"] == on_site["text"], (in_lab, on_site)
    page.locator(".jp-MarkdownCell p:has(.pasted-text)").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "lab__04_kv_cache.png"))
    # glue a new value in a cell run in Lab: the sentence follows
    key = in_lab["key"]
    md = (BOOK / f"{LAB_SECTION}.md").read_text()
    spec = re.search(r"\{glue:text\}`" + re.escape(key) + r"(?::([^`]*))?`", md)[1] or ""
    nb = json.loads((BOOK / f"{LAB_SECTION}.ipynb").read_text())
    stored = next("".join(o["data"][m]) for c in nb["cells"] for o in c.get("outputs", [])
                  if o.get("metadata", {}).get("scrapbook", {}).get("name") == key
                  for m in o["data"] if m.endswith("text/plain"))
    old = ast.literal_eval(stored)
    new = "an edited phrase" if isinstance(old, str) else type(old)(old * 3 + 7)
    from myst_nb.core.variables import format_plain_text

    expected = format_plain_text(repr(new), spec)
    assert expected not in in_lab["text"]
    page.evaluate("""async source => {
        const app = window.jupyterapp, panel = app.shell.currentWidget, notebook = panel.content;
        await panel.sessionContext.ready;
        notebook.activeCellIndex = notebook.widgets.length - 1;
        await app.commands.execute('notebook:insert-cell-below');
        notebook.activeCell.model.sharedModel.setSource(source);
        await app.commands.execute('notebook:run-cell');
    }""", f"from book_machinery.prose import record\nrecord({key}={new!r})")
    page.wait_for_function(f"() => ({FIRST_GLUED})('.jp-Notebook').text.includes({expected!r})",
                           timeout=90_000)
    edited = page.evaluate(FIRST_GLUED, ".jp-Notebook")["text"]
    assert edited == on_site["text"].replace(format_plain_text(stored, spec), expected, 1), edited
    assert not outside, f"JupyterLab asked the network for: {outside}"
    page.close()


def test_citations_carry_the_bibliographys_own_labels(browsed):
    labels = browsed["bibliography"]["labels"]
    bib = urldefrag(browsed["bibliography"]["url"])[0]
    wrong, checked = [], 0
    for doc, r in browsed.items():
        for cite in r["cited"]:
            for text, href in cite["links"]:
                url, anchor = urldefrag(href)
                if url != bib:
                    continue
                label = labels.get(anchor, "?")
                checked += 1
                # {cite:p}: the link is the label; {cite:t}: "Author [year]" with the year linked
                author, _, year = label.rpartition(", ")
                if text != label and not (text == year and cite["text"] == f"{author} [{year}]"):
                    wrong.append((doc, cite["text"], label))
    assert checked > 50, f"only {checked} citations checked"
    assert not wrong, f"citations whose text is not the bibliography's label: {wrong[:10]}"
    assert all(not re.fullmatch(r"\d+", v) for v in labels.values()), "the bibliography is numbered"


def test_every_entry_links_back_to_where_it_is_cited(browsed):
    cited_from = {urldefrag(h)[1] for r in browsed.values() for c in r["cited"] for _, h in c["links"]}
    entries = browsed["bibliography"]["labels"]
    ids = {urldefrag(r["url"])[0]: set(r["ids"]) for r in browsed.values()}
    back = browsed["bibliography"]["backlinks"]
    assert len(back) >= len(cited_from & set(entries)), "fewer back-links than cited entries"
    dangling = [h for h in back if urldefrag(h)[1] not in ids.get(urldefrag(h)[0], set())]
    assert not dangling, f"back-links to no citation: {dangling[:5]}"


def test_every_glossary_entry_links_back_to_where_its_term_is_explained(browsed):
    """Each entry links to one section (the first that links the term, or else names it), and
    that section is a page of the book that uses the term."""
    entries = browsed["glossary"]["glossary"]
    assert len(entries) >= 80, f"only {len(entries)} glossary entries"
    alone = [e["term"] for e in entries if len(e["back"]) != 1]
    assert not alone, f"glossary entries without their one link back: {alone}"
    pages = {urldefrag(r["url"])[0]: r for r in browsed.values()}
    for e in entries:
        target = pages.get(urldefrag(e["back"][0])[0])
        assert target is not None, f"{e['term']}: links back to a page outside the contents"
        linked = e["id"] in target["term_links"]
        assert linked or urldefrag(e["back"][0])[1] in target["ids"], e


def test_every_page_stays_under_its_weight(site):
    heavy = {}
    for page in site.rglob("*.html"):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text()
        size = len(text.encode()) + sum((page.parent / unquote(src)).stat().st_size
                                        for src in set(re.findall(r'<img[^>]+src="([^"]+)"', text))
                                        if (page.parent / unquote(src)).exists())
        if size > MAX_PAGE:
            heavy[str(page.relative_to(site))] = size
    assert not heavy, f"pages over {MAX_PAGE / 1e6} MB with their pictures: {heavy}"


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed: `apt-get install -y chromium` (.ci/run does this)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", RESOLVER])
        yield b
        b.close()


def contrast(fg: str, bg: str) -> float:
    """WCAG contrast ratio of two CSS rgb()/rgba() colours."""
    def lum(c):
        r, g, b = (float(x) / 255 for x in re.findall(r"[\d.]+", c)[:3])
        f = lambda v: v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)
    a, b = sorted((lum(fg), lum(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_dark_mode_keeps_text_readable(site, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.add_init_script("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');")
    low, dim = [], []
    for doc in ("chapters/training/04_kv_cache", "bibliography", "intro"):
        page.goto((site / f"{doc}.html").as_uri())
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        pairs = page.evaluate("""[...document.querySelectorAll('article p, article figcaption .caption-text, article li, article a')]
            .filter(e => e.checkVisibility() && e.innerText.trim()).slice(0, 400).map(e => {
              // the background a reader sees: every translucent layer blended over the opaque one below
              const layers = [];
              for (let b = e; b; b = b.parentElement) {
                const [r, g, bl, a = 1] = getComputedStyle(b).backgroundColor.match(/[\\d.]+/g).map(Number);
                if (a > 0) layers.push([r, g, bl, a]);
                if (a >= 1) break;
              }
              let seen = [0, 0, 0];
              for (const [r, g, bl, a] of layers.reverse()) seen = seen.map((v, i) => v * (1 - a) + [r, g, bl][i] * a);
              return [e.tagName + '.' + e.className, getComputedStyle(e).color, `rgb(${seen.join(', ')})`];
            })""")
        low += [(doc, what, round(contrast(fg, bg), 1)) for what, fg, bg in pairs if contrast(fg, bg) < 4.5]
        body = [contrast(fg, bg) for what, fg, bg in pairs if what == "P."]
        captions = [contrast(fg, bg) for what, fg, bg in pairs if what.endswith("caption-text")]
        # a caption is read like the text: not a dimmer grey than the paragraphs around it
        dim += [(doc, round(c, 1), round(max(body), 1)) for c in captions if body and c < 0.9 * max(body)]
        if doc == "chapters/training/04_kv_cache":
            page.screenshot(path=str(ARTIFACTS / "dark__04_kv_cache.png"))
    assert not low, f"text below a 4.5:1 contrast in dark mode: {sorted(set(low))[:10]}"
    assert not dim, f"captions dimmer than the text in dark mode (caption, text contrast): {dim[:5]}"


def test_a_citation_lands_below_the_sticky_header(site, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((site / "bibliography.html").as_uri())
    target = page.evaluate("document.querySelectorAll('div.citation')[40].id")
    page.goto((site / "bibliography.html").as_uri() + "#" + target)
    top, header = page.evaluate(f"""[document.getElementById('{target}').getBoundingClientRect().top,
        document.querySelector('.bd-header-article').getBoundingClientRect().bottom]""")
    assert top >= header + 24, f"the target starts {top - header:.0f} px below the header: the line above it is hidden"


def test_search_quotes_prose_over_file(site, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((site / "search.html").as_uri() + "?q=cache")
    page.wait_for_function("document.querySelectorAll('#search-results li p.context').length > 3", timeout=20000)
    quotes = page.evaluate("[...document.querySelectorAll('#search-results li p.context')].map(p => p.innerText)")
    assert all("cache" in q.lower() for q in quotes), quotes[:3]
    assert not any(re.search(r"\b\d+\.\d+\. \w", q[:12]) for q in quotes), f"a contents list quoted: {quotes[:3]}"


def test_the_source_archive_holds_the_book(site):
    archive = next((site / "_downloads").glob("*-source.tar.gz"))
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    top = {n.split("/", 1)[0] for n in names}
    assert len(top) == 1, f"the archive does not unpack into one folder: {top}"
    inside = {n.split("/", 1)[1] for n in names if "/" in n}
    for needed in ("Makefile", "README.md", "pyproject.toml", "requirements.txt", "book/_toc.yml",
                   "book/references.bib", "lib/transformer_arithmetic/__init__.py"):
        assert needed in inside, f"the archive lacks {needed}"
    for md in paired_notebooks():
        for suffix in (".md", ".ipynb"):
            assert str(md.relative_to(ROOT).with_suffix(suffix)) in inside, f"the archive lacks {md.stem}{suffix}"
    junk = [n for n in inside if n.startswith((".venv/", ".git/", "book/_build/", ".cache/")) or n == ".git"]
    assert not junk, f"the archive carries build output or history: {junk[:5]}"


@pytest.mark.slow(seconds=20)
def test_the_wheel_installs_offline_and_runs_a_downloaded_notebook(site, tmp_path):
    """A reader's route: the wheel from the site into a new environment (no network, no index: its
    requirements come from this environment, put on the path as plain folders), then a notebook as
    the site offers it, run to its end in a kernel of that environment."""
    wheel = next((site / "_downloads").glob("*.whl"))
    notebook = site / "_sources" / "chapters" / "why_won" / "07_what_won.ipynb"
    nb = json.loads(notebook.read_text())
    first = "".join(nb["cells"][0]["source"])
    assert wheel.name in first and "pip install" in first, f"the notebook's first cell does not say how to install: {first[:200]}"
    assert f"pip install torch --index-url {TORCH_CPU_INDEX}" in first, "the first cell does not take PyTorch's CPU build"
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True)
    python = fresh / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "requirements-from-the-test.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                          "--quiet", "--disable-pip-version-check", str(wheel)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    script = (
        "import json, sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "import transformer_arithmetic, book_machinery\n"
        f"assert transformer_arithmetic.__file__.startswith({str(fresh)!r}), transformer_arithmetic.__file__\n"
        f"nb = nbformat.read({str(notebook)!r}, as_version=4)\n"
        "NotebookClient(nb, timeout=120, kernel_name='python3').execute()\n"
        "errors = [o for c in nb.cells for o in c.get('outputs', []) if o.get('output_type') == 'error']\n"
        "print(len(nb.cells), len(errors))\n")
    run = subprocess.run([str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, f"the downloaded notebook did not run:\n{run.stderr[-3000:]}"
    cells, errors = map(int, run.stdout.split())
    assert cells == len(nb["cells"]) and errors == 0
