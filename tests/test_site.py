"""The published site works: a clean warnings-as-errors build, opened page by page in headless Chromium.

Every page is served over loopback HTTP and loaded in Debian's Chromium (driven by
Playwright's Python client; no browser is downloaded). For each page: no console errors,
every image loads and has alt text, math is typeset by the MathJax shipped inside the site
(no network), every internal link and anchor resolves, and the number of figures equals the
number of figures the notebook glues. Screenshots of a few pages go to test-artifacts/.
"""
from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from book_files import BOOK, ROOT, paired_notebooks

pytestmark = pytest.mark.site

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ["intro", "chapters/training/04_kv_cache", "chapters/why_won/04_cutting_the_cost"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Build the whole book, every page, failing on any warning."""
    out = tmp_path_factory.mktemp("site")
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
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
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
                 if "image/png" in o.get("data", {}) and "scrapbook" in o.get("metadata", {})}
        doc = str(md.relative_to(BOOK).with_suffix(""))
        assert browsed[doc]["figures"] == len(glued), f"{doc}: {browsed[doc]['figures']} figures shown, {len(glued)} glued"
