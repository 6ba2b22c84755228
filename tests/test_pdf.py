"""The PDF edition: `python -m book_machinery.pdf` prints the book once, and poppler reads it back.

One print (the single-page build, printed by headless Chromium, into a scratch directory) is
checked against the single-page HTML it was printed from, not against anything the printing
script reports: a sane page count and no blank page, every figure printed as vector (only the
rasters a figure embeds on purpose are pictures, each at its own size), every glued number of every section on that section's pages, no "??" and no
TeX left untypeset, no toggle or button text, nothing printed in the margins, running headers
with each section's number and title, contents and exercise/solution pointers that give the
right pages, and every solution in the solutions appendix.

Needs Debian's chromium and poppler-utils (.ci/run and `make pdf` install them). To check an
existing print again while working on these tests: BOOK_PDF_PRINTED=DIR, where DIR was given
to `python -m book_machinery.pdf --path-output DIR --no-site`.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from book_files import BOOK, ROOT

pytestmark = [pytest.mark.pdf, pytest.mark.slow(seconds=55)]

TOOLS = {"chromium": "chromium", "pdfinfo": "poppler-utils", "pdftotext": "poppler-utils",
         "pdfimages": "poppler-utils"}
MM = 72 / 25.4  # PDF points per millimetre
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class SinglePage(HTMLParser):
    """What the single-page build holds, read in one pass (a tree parser takes four times as long):
    its documents (the marker id before each, section number, title without the number, glued
    values and whether each sits in a solution), its figures' sources, its exercises (id, caption
    number) and its solutions (the exercise each solves, by id and by name)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.documents: list[dict] = []
        self.figures: list[str] = []
        self.exercises: list[dict] = []
        self.solutions: list[dict] = []
        self._open: list[tuple[str, set]] = []  # (tag, roles) of every open element
        self._docs: list[dict] = []              # documents open around the current position
        self._marker: str | None = None
        self._capture: list[str] | None = None

    def _inside(self, role: str) -> bool:
        return any(role in roles for _, roles in self._open)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        roles = set()
        if tag == "span" and (a.get("id") or "").startswith("document-"):
            self._marker = a["id"]
        elif tag == "section" and self._marker:
            doc = {"anchor": self._marker, "number": "", "title": None, "glued": []}
            self.documents.append(doc)
            self._docs.append(doc)
            self._marker = None
            roles.add("document")
        elif re.fullmatch(r"h[1-6]", tag) and self._docs and self._docs[-1]["title"] is None:
            roles.add("title")
            self._capture, self._heading = [], self._docs[-1]
        elif tag == "span" and "section-number" in classes and self._inside("title"):
            roles.add("number")
        elif tag == "a" and "headerlink" in classes:
            roles.add("skip")
        elif tag == "span" and "pasted-text" in classes:
            roles.add("glue")
            self._capture = []
        elif tag == "div" and "solution" in classes:
            roles.add("solution")
            self.solutions.append({"exercise": None, "name": None})
        elif tag == "a" and self._inside("solution") and self._inside("solution-title") and self.solutions[-1]["name"] is None:
            self.solutions[-1]["exercise"] = (a.get("href") or "").split("#")[-1]
            roles.add("solution-link")
            self._capture = []
        elif tag == "p" and "admonition-title" in classes and self._inside("solution"):
            roles.add("solution-title")
        elif tag == "div" and "exercise" in classes:
            self.exercises.append({"id": a.get("id"), "name": None})
            roles.add("exercise")
        elif tag == "span" and "caption-number" in classes and self._inside("exercise") and self.exercises[-1]["name"] is None:
            roles.add("caption")
            self._capture = []
        elif tag == "img" and self._inside("figure"):
            self.figures.append(a.get("src"))
        if tag == "figure":
            roles.add("figure")
        if tag not in VOID:
            self._open.append((tag, roles))

    def handle_endtag(self, tag):
        if tag in VOID or not self._open:
            return
        while self._open:
            open_tag, roles = self._open.pop()
            if "document" in roles:
                self._docs.pop()
            if "title" in roles:
                self._heading["title"] = re.sub(r"\s+", " ", "".join(self._capture)).strip()
                self._capture = None
            if "glue" in roles and self._docs:
                value = re.sub(r"\s+", " ", "".join(self._capture or [])).strip()
                self._docs[-1]["glued"].append((value, self._inside("solution")))
                self._capture = None
            if "solution-link" in roles:
                self.solutions[-1]["name"] = re.sub(r"\s+", " ", "".join(self._capture)).strip()
                self._capture = None
            if "caption" in roles:
                self.exercises[-1]["name"] = re.sub(r"\s+", " ", "".join(self._capture)).strip()
                self._capture = None
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self._capture is None or self._inside("skip"):
            return
        if self._inside("number") and self._docs:
            self._docs[-1]["number"] += data.strip().rstrip(".")
            return
        self._capture.append(data)


def _tools_or_skip() -> None:
    missing = sorted({pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None})
    if not missing:
        return
    line = f"apt-get install -y {' '.join(missing)}"
    if shutil.which("apt-get") and os.geteuid() == 0:
        pytest.fail(f"the PDF test needs Debian's {', '.join(missing)}: `{line}` (.ci/run and `make pdf` do this)")
    pytest.skip(f"cannot install {', '.join(missing)} here (not root or no apt-get): `sudo {line}`")


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict:
    """Build and print the book once; read the PDF back with poppler and the HTML it came from."""
    _tools_or_skip()
    if os.environ.get("BOOK_PDF_PRINTED"):
        out = Path(os.environ["BOOK_PDF_PRINTED"])
    else:
        out = tmp_path_factory.mktemp("pdf")
        run = subprocess.run([sys.executable, "-m", "book_machinery.pdf", "--path-output", str(out), "--no-site"],
                             capture_output=True, text=True)
        assert run.returncode == 0, f"book_machinery.pdf failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    pdf = next((out / "_build" / "pdf").glob("*.pdf"))
    page = out / "_build" / "singlehtml" / json.loads(pdf.with_suffix(".json").read_text())["html"].split("/")[-1]
    book = SinglePage()
    book.feed(page.read_text())

    pages = []
    for p in re.finditer(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', _run("pdftotext", "-bbox", str(pdf), "-"), re.S):
        words = [dict(x0=float(m[0]), y0=float(m[1]), x1=float(m[2]), y1=float(m[3]), w=html.unescape(m[4])) for m in
                 re.findall(r'<word xMin="(-?[\d.]+)" yMin="(-?[\d.]+)" xMax="(-?[\d.]+)" yMax="(-?[\d.]+)">(.*?)</word>', p[3])]
        pages.append({"width": float(p[1]), "height": float(p[2]), "words": words})
    dests = {}
    for line in _run("pdfinfo", "-dests", str(pdf)).splitlines()[1:]:
        m = re.match(r'\s*(\d+)\s+\[.*\]\s+"(.*)"\s*$', line)
        if m:
            dests.setdefault(m[2], int(m[1]))
    images = [c.split() for c in _run("pdfimages", "-list", str(pdf)).splitlines()[2:]]
    text = [" ".join(w["w"] for w in p["words"]) for p in pages]  # each page's words in reading order
    return {"pdf": pdf, "site": page.parent, "book": book, "text": text,
            "pages": pages, "dests": dests, "images": [c for c in images if c[2] == "image"]}


def _page_ranges(printed) -> dict[str, range]:
    """Where each document is printed: from its first page to the page before the next one starts."""
    dests, last = printed["dests"], len(printed["text"])
    starts = sorted({(dests[d["anchor"]], d["anchor"]) for d in printed["book"].documents if d["anchor"] in dests}
                    | {(dests[k], k) for k in ("print-solutions",) if k in dests})
    return {a: range(p, starts[i + 1][0] if i + 1 < len(starts) else last + 1) for i, (p, a) in enumerate(starts)}


def _margins() -> tuple[float, float, float, float]:
    """top, right, bottom, left of the printed page, in points, from book/_static/print.css."""
    css = (BOOK / "_static" / "print.css").read_text()
    m = re.search(r"@page\s*{\s*margin:\s*([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm", css)
    assert m, "print.css has no `@page { margin: T R B L }` in mm"
    return tuple(float(v) * MM for v in m.groups())


def test_page_count_is_sane_and_no_page_is_blank(printed):
    pages, docs, text = len(printed["pages"]), printed["book"].documents, printed["text"]
    assert pages == len(text) > 0
    chars = sum(len(t) for t in text)
    # each document starts a page; a page of text holds well over 1,500 characters
    assert len(docs) + 2 <= pages <= len(docs) + len(printed["book"].figures) + chars / 1500, (pages, len(docs), chars)
    top, _, bottom, _ = _margins()
    with_images = {int(c[0]) for c in printed["images"]}
    blank = [i + 1 for i, p in enumerate(printed["pages"]) if i + 1 not in with_images
             and not any(top <= w["y0"] and w["y1"] <= p["height"] - bottom for w in p["words"])]
    assert not blank, f"pages with nothing but a header and a number: {blank}"


def test_text_prints_at_its_size(printed):
    """Chromium shrinks every page when anything is wider than the text column; then nothing is
    in the margins, but nothing is at its size either. Most words must be at the body size."""
    css = (BOOK / "_static" / "print.css").read_text()
    body = float(re.search(r"html\s*{\s*font-size:\s*([\d.]+)pt", css)[1])
    heights = [w["y1"] - w["y0"] for p in printed["pages"] for w in p["words"]]
    at_size = sum(1.0 <= h / body <= 1.25 for h in heights) / len(heights)
    assert at_size > 0.3, f"only {at_size:.0%} of the words are printed at the body size of {body} pt: shrunk to fit?"


def _rasters_inside(svg: Path) -> list[tuple[int, int]]:
    """The pixel sizes of the raster pictures an SVG figure embeds (its dense grids, heat maps and
    colour bars), read from the PNG data itself."""
    import base64
    import io

    sizes = []
    for data in re.findall(r'xlink:href="data:image/png;base64,([^"]+)"', svg.read_text()):
        with Image.open(io.BytesIO(base64.b64decode(data))) as im:
            sizes.append(im.size)
    return sizes


def test_every_figure_prints_as_vector_with_its_rasters_at_their_resolution(printed):
    """An SVG figure reaches the PDF as vector drawing: the only pictures in the PDF are the rasters
    the figures embed on purpose (each at its own pixel size) and any PNG figure (at its own size and
    resolution). A figure Chromium flattened into a picture would show up as one more."""
    figures = printed["book"].figures
    assert figures, "no figures in the single-page build"
    assert any(src.endswith(".svg") for src in figures), "no figure is SVG"
    # (width, height) -> the PDF's image objects of that size (Chromium embeds each picture once)
    embedded: dict[tuple[int, int], set[int]] = {}
    ppi: dict[tuple[int, int], float] = {}
    for c in printed["images"]:
        size = (int(c[3]), int(c[4]))
        embedded.setdefault(size, set()).add(int(c[10]))
        ppi[size] = min(ppi.get(size, 1e9), float(c[12]))
    expected: dict[tuple[int, int], int] = {}
    for src in sorted(set(figures)):
        path = printed["site"] / src
        if path.suffix == ".svg":
            for size in _rasters_inside(path):
                expected[size] = expected.get(size, 0) + 1
                assert size in embedded, f"{src}: its {size[0]}x{size[1]} raster is not in the PDF at its own size"
            continue
        with Image.open(path) as im:
            size, dpi = im.size, float(im.info.get("dpi", (96,))[0])
        expected[size] = expected.get(size, 0) + 1
        assert size in embedded, f"{src} ({size[0]}x{size[1]} px) is not in the PDF at its own size"
        assert ppi[size] >= dpi - 1.5, f"{src} prints at {ppi[size]} ppi, below the {dpi:.0f} dpi it was drawn at"
    flattened = {size: len(ids) for size, ids in embedded.items() if size not in expected}
    assert not flattened, f"pictures in the PDF that no figure embeds (a figure printed as a raster?): {flattened}"


def test_every_glued_number_is_on_its_sections_pages(printed):
    ranges, text, dests = _page_ranges(printed), printed["text"], printed["dests"]
    solutions = range(dests["print-solutions"], len(text) + 1) if "print-solutions" in dests else range(0)
    checked, missing = 0, []
    for doc in printed["book"].documents:
        own = " ".join(text[p - 1] for p in ranges.get(doc["anchor"], []))
        appendix = " ".join(text[p - 1] for p in solutions)
        for value, in_solution in doc["glued"]:
            hay = appendix if in_solution else own
            checked += 1
            # a value may break across lines: at a space, or at a hyphen (kept or not)
            squeezed = (re.sub(r"\s+", "", hay), re.sub(r"\s+", "", re.sub(r"(\w)[-\u2010] (\w)", r"\1\2", hay)))
            if value not in hay and not any(re.sub(r"\s+", "", value) in s for s in squeezed):
                missing.append((doc["anchor"], value, "solutions" if in_solution else "section"))
    assert checked > 0, "no glued values found in the single-page build"
    assert not missing, f"glued values missing from their section's pages: {missing[:20]}"


def test_no_unresolved_reference_untypeset_math_or_site_controls(printed):
    whole = " ".join(printed["text"])
    assert "??" not in whole, whole[max(0, whole.find("??") - 80):whole.find("??") + 80]
    for raw in ("\\(", "\\)", "\\[", "\\]", "$$", "\\frac", "\\text{"):
        assert raw not in whole, f"untypeset TeX in the PDF: {raw!r}"
    for control in ("Show code cell", "Hide code cell", "Click to show", "Click to hide", "Copy to clipboard",
                    "Skip to main content", "Back to top", "Search this book", "Toggle", "Book PDF"):
        assert control not in whole, f"site control text in the PDF: {control!r}"


def test_nothing_is_printed_in_the_margins(printed):
    top, right, bottom, left = _margins()
    band = 15 * MM  # the running header and the page number sit this close to the text block
    # MathJax draws stretched braces from private-use glyphs whose boxes poppler reports as the
    # width of the stretch; they are not text, so they are left out.
    outside = [(i + 1, w["w"], round(w["x0"]), round(w["x1"])) for i, page in enumerate(printed["pages"])
               for w in page["words"] if not all("\ue000" <= c <= "\uf8ff" for c in w["w"])
               if w["x0"] < left - 1 or w["x1"] > page["width"] - right + 1
               or w["y0"] < top - band or w["y1"] > page["height"] - bottom + band]
    assert not outside, f"text in the margins (page, word, x0, x1): {outside[:20]}"


def test_running_headers_name_the_section(printed):
    top = _margins()[0]
    ranges, checked = _page_ranges(printed), 0
    for doc in printed["book"].documents:
        title = doc["title"]
        for page in ranges.get(doc["anchor"], []):
            header = " ".join(w["w"] for w in printed["pages"][page - 1]["words"] if w["y1"] < top)
            assert doc["number"] in header and " ".join(title.split()[:3]) in header, (page, header, doc["number"], title)
            checked += 1
    assert checked > 0


def test_the_contents_give_each_sections_page(printed):
    dests, docs = printed["dests"], printed["book"].documents
    first = min(dests[d["anchor"]] for d in docs if d["anchor"] in dests)
    lines = _run("pdftotext", "-layout", "-l", str(first - 1), str(printed["pdf"]), "-").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Contents")
    entries = {}
    for line in lines[start + 1:]:
        m = re.match(r"\s*(?:(\d+(?:\.\d+)*)\s+)?(.*?\S)\s{2,}(\d+)\s*$", line)
        if m:
            entries[(m[1] or "", re.sub(r"\s+", " ", m[2]))] = int(m[3])
    listed, wrong = 0, []
    for d in docs:
        key = (d["number"], d["title"])
        if key in entries:
            listed += 1
            if entries[key] != dests.get(d["anchor"]):
                wrong.append((key, entries[key], dests.get(d["anchor"])))
    assert listed >= len(docs) // 2, f"few documents found in the contents: {sorted(entries)}"
    assert not wrong, f"contents entries with the wrong page (entry, listed, actual): {wrong}"


def test_every_solution_is_in_the_appendix_and_the_pointers_agree(printed):
    book, text, dests = printed["book"], printed["text"], printed["dests"]
    solved = [s for s in book.solutions if s["exercise"] in {e["id"] for e in book.exercises}]
    if not solved:
        pytest.skip("the book has no exercises with solutions yet")
    assert "print-solutions" in dests, "no solutions appendix"
    where = {}
    for s in solved:
        found = [(i + 1, int(m)) for i, t in enumerate(text)
                 for m in re.findall(rf"Solution to {re.escape(s['name'])} \(page (\d+)\)", t)]
        assert len(found) == 1, f"{s['name']}: its solution is printed {len(found)} times"
        page, back = found[0]
        assert page >= dests["print-solutions"], f"{s['name']}: solution on page {page}, before the appendix"
        assert back == dests[s["exercise"]], f"the solution to {s['name']} points to page {back}; the exercise is on {dests[s['exercise']]}"
        where[s["exercise"]] = page
    pointers = [int(p) for t in text for p in re.findall(r"Solution on page (\d+)", t)]
    expected = [where[e["id"]] for e in book.exercises if e["id"] in where]
    assert pointers == expected, f"exercises point to pages {pointers}; their solutions are on {expected}"
