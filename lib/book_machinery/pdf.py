"""Print the whole book as one PDF: Jupyter Book's single-page build, printed by
headless Chromium.

    # book/_build/pdf/<title>.pdf, then the site
    python -m book_machinery.pdf
    python -m book_machinery.pdf --no-site         # the PDF alone
    python -m book_machinery.pdf --path-output DIR # into DIR/_build/ (the tests do)
    # any paper size Chromium knows (default A4)
    python -m book_machinery.pdf --paper Letter

1. `jupyter-book build --builder singlehtml -W -n --keep-going`: every page of the book
   in one HTML file, warnings fail the build as for the site.
2. Debian's Chromium, driven by Playwright (no browser is downloaded), loads that file
   with nothing fetched from the network and the site's interactive scripts (search,
   sidebars, toggle buttons) left out, waits until MathJax has typeset every formula and
   every image is decoded, then runs pdf_prepare.js (beside this module): title page,
   contents, a named page per document for the running headers, dropdowns opened,
   solutions moved to an appendix, links shown as references. book/_static/print.css is
   the print stylesheet.
3. It prints twice: the first print tells where every section, exercise and solution
   landed (the PDF's named destinations, read with poppler's `pdfinfo -dests`), the
   second carries those page numbers in the contents and in the exercise/solution
   pointers. If a number moved between prints, it prints again (at most twice more).
4. Unless --no-site: `jupyter-book build -W -n --keep-going book` builds the site, whose
   header then links the PDF (``sphinx_print.py`` copies it into
   _build/html/_downloads/).

Also writes <title>.json beside the PDF: page count, size, time, and what was printed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from .execute import ROOT
from .sphinx_print import pdf_name  # the site links the PDF by the same name

BOOK = ROOT / "book"
PREPARE_JS = Path(__file__).with_name("pdf_prepare.js")
JB = Path(sys.executable).with_name("jupyter-book")

SITE_SCRIPTS = re.compile(
    r"/_static/(scripts/(bootstrap|pydata-sphinx-theme|fontawesome|sphinx-book-theme)"
    r"\.js|sphinx-thebe\.js|searchtools\.js|language_data\.js|clipboard\.min\.js"
    r"|copybutton\.js|togglebutton\.js|design-tabs\.js|book-scroll\.js)"
    r"|/searchindex\.js"
)
"""The site's interactive scripts: navigation, search, copy and toggle buttons, the
scroll cues. None of them renders content, and without them the page loads faster and
nothing moves while printing."""


def book_config() -> dict:
    return yaml.safe_load((BOOK / "_config.yml").read_text()) or {}


def edition_line(config: dict) -> str:
    """Which text this PDF prints, for a reader who cites it: the commit and its
    date."""

    def git(*args: str) -> str:
        run = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return run.stdout.strip() if run.returncode == 0 else ""

    commit, date = git("rev-parse", "--short", "HEAD"), git("log", "-1", "--format=%cs")
    changed = bool(
        git("status", "--porcelain", "--untracked-files=no", "--", "book", "lib")
    )
    parts = []
    if config.get("copyright"):
        parts.append(f"© {config['copyright']} {config.get('author', '')}".strip())
    if commit:
        parts.append(
            f"Edition of {date}, commit {commit}"
            + (" with local changes" if changed else "")
        )
    else:
        parts.append(f"Printed {datetime.date.today().isoformat()}")
    return ". ".join(parts) + "."


def single_page(path_output: Path | None) -> Path:
    """Where the single-page build writes the book."""
    out = (path_output if path_output is not None else BOOK) / "_build" / "singlehtml"
    root = yaml.safe_load((BOOK / "_toc.yml").read_text())["root"]
    return out / f"{Path(root).name}.html"


def reuse(path_output: Path | None) -> Path:
    page = single_page(path_output)
    if not page.exists():
        sys.exit(f"no single-page build at {page}: run without --reuse-html")
    return page


def build_singlehtml(path_output: Path | None) -> Path:
    """The whole book as one HTML page; returns that page."""
    cmd = [
        str(JB),
        "build",
        "--builder",
        "singlehtml",
        "-W",
        "-n",
        "--keep-going",
        str(BOOK),
    ]
    if path_output is not None:
        cmd += ["--path-output", str(path_output)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(
            "the single-page build failed or "
            f"warned:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
        )
    page = single_page(path_output)
    if not page.exists():
        sys.exit(f"the single-page build wrote no {page}")
    return page


def image_dpi(site: Path) -> dict[str, float]:
    """The dots per inch each image of the build was drawn at (from its PNG), by its
    src."""
    from PIL import Image

    dpi = {}
    for path in sorted((site / "_images").glob("*")):
        try:
            with Image.open(path) as im:
                if im.info.get("dpi"):
                    dpi[f"_images/{path.name}"] = float(im.info["dpi"][0])
        except OSError:
            continue
    return dpi


def destinations(pdf: Path) -> dict[str, int]:
    """Every named destination of a PDF (Chromium writes one per link target) and its
    page."""
    run = subprocess.run(
        ["pdfinfo", "-dests", str(pdf)], capture_output=True, text=True, check=True
    )
    dests = {}
    for line in run.stdout.splitlines()[1:]:
        m = re.match(r'\s*(\d+)\s+\[.*\]\s+"(.*)"\s*$', line)
        if m:
            dests.setdefault(m.group(2), int(m.group(1)))
    return dests


def page_count(pdf: Path) -> int:
    info = subprocess.run(
        ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True
    ).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def finish(draft: Path, pdf: Path, info: dict[str, str]) -> None:
    """qpdf packs the loose objects Chromium writes (the tagged structure the outline
    needs) into compressed object streams, which halves the file, and rewrites the
    document information (Chromium sets only the title) with the author and the edition.
    Without qpdf the PDF is kept as Chromium wrote it."""
    if shutil.which("qpdf") is None:
        shutil.copyfile(draft, pdf)
        return
    update = []
    # the trailer, at the end of the file, names the information dictionary
    with draft.open("rb") as f:
        f.seek(max(0, draft.stat().st_size - 2048))
        ref = re.search(rb"/Info\s+(\d+)\s+(\d+)\s+R", f.read())
    if ref:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("D:%Y%m%d%H%M%SZ")
        value = {
            f"/{k}": f"u:{v}"
            for k, v in {**info, "CreationDate": now, "ModDate": now}.items()
            if v
        }
        patch = pdf.with_suffix(".info.json")
        patch.write_text(
            json.dumps(
                {
                    "qpdf": [
                        {
                            "jsonversion": 2,
                            "pushedinheritedpageresources": False,
                            "calledgetallpages": False,
                            "maxobjectid": 1,
                        },
                        {f"obj:{int(ref[1])} {int(ref[2])} R": {"value": value}},
                    ]
                }
            )
        )
        update = [f"--update-from-json={patch}"]
    run = subprocess.run(
        ["qpdf", str(draft), *update, "--object-streams=generate", str(pdf)],
        capture_output=True,
        text=True,
    )
    if update:
        pdf.with_suffix(".info.json").unlink(missing_ok=True)
    if run.returncode not in (0, 3):  # 3: warnings only
        print(
            "qpdf could not pack the PDF, kept as Chromium wrote it: "
            f"{run.stderr.strip()[:200]}"
        )
        shutil.copyfile(draft, pdf)


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit(
            "Chromium is not installed: `apt-get install -y chromium` (`make pdf` "
            "does this as root)"
        )
    return exe


def print_book(page: Path, pdf: Path, paper: str, options: dict) -> dict:
    """Print the single-page build to `pdf`; returns what was printed."""
    from playwright.sync_api import sync_playwright

    if shutil.which("pdfinfo") is None:
        sys.exit(
            "poppler-utils is not installed: `apt-get install -y poppler-utils` "
            "(`make pdf` does this as root)"
        )
    pdf.parent.mkdir(parents=True, exist_ok=True)
    outside, errors = [], []

    def route(r):
        url = r.request.url
        if url.startswith(("file:", "data:")) and not SITE_SCRIPTS.search(url):
            r.continue_()
        else:
            if not url.startswith(("file:", "data:")):
                outside.append(url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium(),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            tab = browser.new_page(viewport={"width": 900, "height": 1200})
            tab.on("pageerror", lambda exc: errors.append(str(exc)))
            tab.route("**/*", route)
            tab.emulate_media(media="print")
            tab.goto(page.resolve().as_uri(), wait_until="load")
            tab.add_script_tag(path=str(PREPARE_JS))
            state = tab.evaluate("bookPrint.ready()")
            if state["untypeset"]:
                sys.exit(
                    f"MathJax left {state['untypeset']} of {state['math']} "
                    "formulas untypeset"
                )
            info = tab.evaluate("opts => bookPrint.prepare(opts)", options)
            tab.evaluate("bookPrint.ready()")
            tab.evaluate("t => { document.title = t; }", options["title"])
            # The first print only tells where things land, so it leaves the pictures
            # out (their
            # boxes stay, so nothing moves) and is not tagged. The last one is tagged:
            # the PDF's
            # outline (bookmarks) needs that, and the figures' alt text goes into the
            # PDF with it.
            kwargs = dict(format=paper, print_background=True)
            with tempfile.TemporaryDirectory() as tmp:
                draft = Path(tmp) / "draft.pdf"
                tab.evaluate("bookPrint.draft(true)")
                tab.pdf(path=str(draft), **kwargs)
                tab.evaluate("bookPrint.draft(false)")
                prints, missing = 1, []
                for prints in range(2, 5):
                    pages = destinations(draft)
                    missing = tab.evaluate("pages => bookPrint.fillPages(pages)", pages)
                    tab.pdf(path=str(draft), **kwargs, outline=True, tagged=True)
                    landed = destinations(draft)  # read once, not once a target
                    moved = {
                        t for t in info["pageTargets"] if landed.get(t) != pages.get(t)
                    }
                    if not moved:
                        break
                finish(
                    draft,
                    pdf,
                    {
                        "Title": options["title"],
                        "Author": options.get("author", ""),
                        "Subject": options.get("edition", ""),
                        "Producer": "Chromium (Skia/PDF), qpdf",
                        "Creator": "Jupyter Book (single-page build), printed by "
                        "book_machinery.pdf",
                    },
                )
        finally:
            browser.close()
    if outside:
        sys.exit(f"the page asked the network for: {sorted(set(outside))[:5]}")
    if errors:
        sys.exit(f"script errors while printing: {errors[:5]}")
    if missing:
        sys.exit(f"no page found for: {sorted(set(missing))[:5]}")
    if moved:
        sys.exit(
            f"page numbers still moving after {prints} prints: {sorted(moved)[:5]}"
        )
    info["prints"] = prints
    return info


def main(argv: list[str] | None = None) -> None:
    """Print the book (see the module's docstring); ``argv`` as on the command line."""
    ap = argparse.ArgumentParser(
        prog="python -m book_machinery.pdf", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--path-output",
        type=Path,
        help="build into DIR/_build/ instead of book/_build/",
    )
    ap.add_argument(
        "--paper", default="A4", help="paper size: A4 (default), Letter, A5, ..."
    )
    ap.add_argument(
        "--no-site", action="store_true", help="do not rebuild the site afterwards"
    )
    ap.add_argument(
        "--reuse-html",
        action="store_true",
        help="print the single-page build already there (when working on print.css)",
    )
    args = ap.parse_args(argv)
    start = time.perf_counter()
    config = book_config()
    title = config.get("title") or "Book"
    build = (args.path_output if args.path_output is not None else BOOK) / "_build"
    pdf = build / "pdf" / pdf_name(title)

    page = (
        reuse(args.path_output)
        if args.reuse_html
        else build_singlehtml(args.path_output)
    )
    built = time.perf_counter()
    info = print_book(
        page,
        pdf,
        args.paper,
        {
            "title": title,
            "author": config.get("author", ""),
            "edition": edition_line(config),
            "imageDpi": image_dpi(page.parent),
        },
    )
    printed = time.perf_counter()
    pages = page_count(pdf)
    report = {
        "pdf": str(pdf),
        "html": str(page),
        "pages": pages,
        "bytes": pdf.stat().st_size,
        "seconds": {
            "singlehtml": round(built - start, 1),
            "print": round(printed - built, 1),
        },
        "prints": info["prints"],
        "figures": info["figures"],
        "exercises": info["exercises"],
        "solutions": info["solutions"],
        "documents": info["documents"],
    }
    pdf.with_suffix(".json").write_text(json.dumps(report, indent=1))
    print(
        f"{pdf.relative_to(ROOT) if pdf.is_relative_to(ROOT) else pdf}: {pages} "
        "pages, "
        f"{pdf.stat().st_size / 2**20:.1f} MiB, {info['figures']} figures, "
        f"{info['exercises']} exercises; "
        f"single-page build {built - start:.0f} s, {info['prints']} prints "
        f"{printed - built:.0f} s"
    )
    if not args.no_site:
        cmd = [str(JB), "build", "-W", "-n", "--keep-going", str(BOOK)]
        if args.path_output is not None:
            cmd += ["--path-output", str(args.path_output)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(
                "the site build failed or "
                f"warned:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
            )
        print(
            f"site: {build / 'html'} links the PDF from its header "
            f"({time.perf_counter() - start:.0f} s in all)"
        )


if __name__ == "__main__":
    main()
