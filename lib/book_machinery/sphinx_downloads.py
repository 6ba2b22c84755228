"""The code one download away: the site ships the book's source and its library, and
every page says how to run them. A Sphinx extension, through documented hooks only.

1. **Two files in ``_downloads/``**, made when the HTML build finishes (in
   ``.cache/downloads``, again only when a file they hold has changed, then copied):
   the library as a wheel, built by pip from a copy of ``pyproject.toml`` and ``lib/``
   (so no ``build/`` folder is left behind), and the book's whole source as
   ``<title>-source.tar.gz`` (every file ``.gitignore`` does not leave out, under one
   folder, so ``make book`` and ``make test`` run in it).
2. **Every page's header** offers them: the theme's download menu gets "The library
   (.whl)", "The book's source (.tar.gz)" and "How to run the code" beside the section's
   own notebook (its ``.ipynb``); the theme's ".pdf", which prints the page in view, is
   named "print this page", and once ``make pdf`` has printed the whole book
   (``sphinx_print``'s ``book_pdf``) the menu and the landing page offer that PDF.
3. **Each downloadable notebook** (the copies in ``_sources/``, never the sources) opens
   with a cell that says how to install the library and open it. Written at build time
   so that the text always names the wheel this build ships, and the book's own
   notebooks stay free of set-up that is not the section's.
4. **The directive** ``{book-downloads}`` (on the landing page) links both files and
   gives the commands for a section (PyTorch's CPU build first: ``DOWNLOAD_BYTES`` says
   what each route downloads) and for the whole book;
   ``static/book-downloads.js`` (added to the pages that use the directive) turns the
   wheel's name in the first command into its full address, so pip fetches it from
   wherever the site is served (file:// too) and the notebook is the one download a
   section needs.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from .execute import ROOT
from .sphinx_print import pdf_name

__all__ = ["wheel_name", "archive_name", "archive_files", "install_commands",
           "install_sizes", "install_cell", "BookDownloads", "PdfItem", "setup",
           "TORCH_CPU_INDEX", "DOWNLOAD_BYTES"]

logger = logging.getLogger(__name__)
DOWNLOADS = "_downloads"
CACHE = ROOT / ".cache" / "downloads"
"""Where the wheel and the archive are made, once for every build that copies them (the
site, the tests' builds, the preview)."""
ALWAYS_LEFT_OUT = (".git", "build/")
"""Left out of the archive besides what ``.gitignore`` names: the repository's own
history, and a build folder a packaging tool may leave."""


def wheel_name(root: Path = ROOT) -> str:
    """The file name of the library's wheel, from ``pyproject.toml`` (a pure-Python
    wheel for any platform)."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    name = project["name"].replace("-", "_").replace(".", "_")
    return f"{name}-{project['version']}-py3-none-any.whl"


def distribution(root: Path = ROOT) -> str:
    """The distribution's name as pip writes it in a requirement."""
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["name"]


def archive_name(title: str) -> str:
    """The source archive's file name: the book's title, as the PDF's, with -source."""
    return pdf_name(title).removesuffix(".pdf") + "-source.tar.gz"


def _ignored(relative: str, is_dir: bool, patterns: list[str]) -> bool:
    """Whether ``.gitignore``'s simple patterns (``name/``, ``*.ext``, ``a/b/``) leave
    out the path ``relative`` (with '/' between its parts)."""
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        directory_only = pattern.endswith("/")
        pattern = pattern.rstrip("/")
        if directory_only and not is_dir:
            continue
        anchored = "/" in pattern
        if fnmatch.fnmatch(relative if anchored else name, pattern.lstrip("/")):
            return True
    return False


def archive_files(root: Path = ROOT) -> list[Path]:
    """Every file of the book's source: the tree under ``root`` less what
    ``.gitignore`` leaves out (and ``ALWAYS_LEFT_OUT``), sorted."""
    ignore = root / ".gitignore"
    patterns = [
        line.strip()
        for line in (ignore.read_text().splitlines() if ignore.exists() else [])
        if line.strip() and not line.startswith(("#", "!"))
    ] + list(ALWAYS_LEFT_OUT)
    found: list[Path] = []

    def walk(folder: Path) -> None:
        for path in sorted(folder.iterdir()):
            relative = path.relative_to(root).as_posix()
            if _ignored(relative, path.is_dir(), patterns):
                continue
            if path.is_dir():
                walk(path)
            elif path.is_file():
                found.append(path)

    walk(root)
    return found


def _newest(paths) -> float:
    return max((p.stat().st_mtime for p in paths), default=0.0)


def _fresh(target: Path, sources: list[Path]) -> bool:
    return target.exists() and target.stat().st_mtime >= _newest(sources)


def write_archive(target: Path, folder: str, root: Path = ROOT) -> None:
    """The source as a .tar.gz: every file of ``archive_files`` under ``folder/``, in
    a fixed order, owned by nobody in particular."""
    files = archive_files(root)
    if _fresh(target, files):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in files:
            name = f"{folder}/{path.relative_to(root).as_posix()}"
            info = tar.gettarinfo(str(path), name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with path.open("rb") as f:
                tar.addfile(info, f)
    part = target.with_name(f".{target.name}.{os.getpid()}")  # whole or not at all:
    with gzip.GzipFile(part, "wb", mtime=0) as out:         # builds run side by side
        out.write(buf.getvalue())
    os.replace(part, target)


def write_wheel(target: Path, root: Path = ROOT) -> None:
    """The library as a wheel, built by pip (no network, no isolation: the pinned
    setuptools) from a copy of ``pyproject.toml`` and ``lib/``."""
    sources = [root / "pyproject.toml", *[
        p for p in (root / "lib").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p)
    ]]
    if _fresh(target, sources):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="book-wheel-") as tmp:
        copy = Path(tmp) / "src"
        copy.mkdir()
        shutil.copy2(root / "pyproject.toml", copy / "pyproject.toml")
        shutil.copytree(root / "lib", copy / "lib",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        run = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
             "--no-index", "--quiet", "--disable-pip-version-check", "-w",
             str(Path(tmp) / "dist"), str(copy)],
            capture_output=True, text=True,
        )
        built = Path(tmp) / "dist" / target.name
        if run.returncode != 0 or not built.exists():
            raise RuntimeError(
                f"pip could not build {target.name}:\n{run.stderr[-2000:]}"
            )
        part = target.with_name(f".{target.name}.{os.getpid()}")
        shutil.copyfile(built, part)
        os.replace(part, target)


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's own index of its CPU-only builds, as PyTorch's install page gives it for
pip (``--index-url``)."""

DOWNLOAD_BYTES = {"cpu": 291_838_941, "pypi": 2_830_014_296}
"""What a reader's pip downloads for one section on Linux x86-64 with Python 3.11 and
torch 2.13.0 (the version the book is checked with), measured on 2026-12-01 in a fresh
virtual environment with no pip configuration, from PyPI:

- ``cpu``, the commands the book gives: PyTorch's CPU wheel (191,794,682 bytes; this
  machine cannot reach PyTorch's index, so the measure is the same file from the local
  disk) and its 9 dependencies from PyPI (10,450,046), then the library, JupyterLab,
  numpy and matplotlib (97 wheels, 89,594,213 from PyPI, with torch already there);
- ``pypi``, ``pip install "<wheel>[torch]" jupyterlab`` alone: 126 wheels, PyPI's torch
  (526,574,961) with the CUDA libraries it requires on Linux (nvidia-*, triton and
  cuda-bindings: 2,203,707,727) and the same rest.

Sizes are the wheels' (``pip install --dry-run --report``, then each file's length as
PyPI serves it). Installed, the CPU route takes 1.3 GB of disk."""


def gigabytes(route: str) -> str:
    """The download of ``route`` (``DOWNLOAD_BYTES``) in GB, to one decimal."""
    return f"{DOWNLOAD_BYTES[route] / 1e9:.1f} GB"


def install_commands(wheel: str, notebook: str) -> list[str]:
    """The three commands that run one section's notebook: PyTorch's CPU build from
    PyTorch's own index, the library (and JupyterLab), then the notebook."""
    return [f"pip install torch --index-url {TORCH_CPU_INDEX}",
            f'pip install "{wheel}[torch]" jupyterlab', f"jupyter lab {notebook}"]


def install_sizes() -> str:
    """What the commands download, and what PyPI's own torch would, in one sentence."""
    return (
        "The first command takes PyTorch's CPU build from PyTorch's own index, as "
        "PyTorch's install page gives it: with the second, about "
        f"{gigabytes('cpu')} to download on Linux (PyTorch 2.13, Python 3.11). Without "
        "it, pip takes PyPI's torch, which on Linux brings NVIDIA's CUDA libraries: "
        f"about {gigabytes('pypi')}, of use only with an NVIDIA GPU. On macOS and "
        "Windows, PyPI's torch is already the CPU build, and pip install torch alone "
        "does."
    )


def install_cell(wheel: str, archive: str, notebook: str) -> dict:
    """The first cell of a downloadable notebook: how to install the library and run
    it."""
    commands = "\n".join(install_commands(wheel, notebook))
    text = (
        "**To run this notebook** you need the book's library (the packages "
        "`transformer_arithmetic`, `transformer_calculator` and `book_machinery`). "
        f"Download its wheel, `{wheel}`, from the download menu (the arrow at the top "
        "of every page of the book) into the folder that holds this notebook, then "
        "run in a terminal there:\n\n"
        f"```\n{commands}\n```\n\n"
        f"{install_sizes()} (`[torch]` brings PyTorch, which some cells check their "
        f"arithmetic against.) The whole book's source, `{archive}`, is in the same "
        "menu: unpack it and run `make book` to build the site or `make test` to check "
        "it, as its README says."
    )
    return {"cell_type": "markdown", "id": "book-install", "metadata": {},
            "source": text.splitlines(keepends=True)}


def _inject_install_cells(outdir: Path, wheel: str, archive: str) -> None:
    for path in sorted((outdir / "_sources").rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        if nb["cells"] and nb["cells"][0].get("id") == "book-install":
            continue
        cell = install_cell(wheel, archive, path.name)
        if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
            cell.pop("id")
        nb["cells"].insert(0, cell)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")


def _names(app) -> tuple[str, str]:
    return wheel_name(), archive_name(app.config.html_title or app.config.project or "")


def _copied(made: Path, target: Path) -> None:
    """Copy ``made`` to ``target`` unless ``target`` is already as new."""
    if not (target.exists() and target.stat().st_mtime >= made.stat().st_mtime):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(made, target)


def _build_downloads(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    wheel, archive = _names(app)
    out = Path(app.outdir)
    write_wheel(CACHE / wheel)  # made once for every build that needs them
    write_archive(CACHE / archive, archive.removesuffix("-source.tar.gz"))
    for name in (wheel, archive):
        _copied(CACHE / name, out / DOWNLOADS / name)
    _inject_install_cells(out, wheel, archive)
    logger.info(f"the header offers {DOWNLOADS}/{wheel} and {DOWNLOADS}/{archive}")


def _header_links(app, pagename, templatename, context, doctree):
    """Add the library, the source and the way to run them to the download menu (and
    the script that completes the install command to a page that gives it)."""
    if app.builder.name != "html":
        return
    if doctree is not None and any(
        "book-downloads" in n["classes"] for n in doctree.findall(nodes.container)
    ):
        app.add_js_file("book-downloads.js")
    wheel, archive = _names(app)
    pathto = context["pathto"]
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        group["tooltip"] = "Download this section, the library or the whole book"
        for button in group["buttons"]:
            if button.get("text") == ".ipynb" or button.get("label") == (
                "download-source-button"
            ) and context.get("page_source_suffix") == ".ipynb":
                button["tooltip"] = "This section as a notebook (it needs the library)"
            elif button.get("label") == "download-pdf-button":
                # the theme's ".pdf" prints the page in view, not the book: say so
                button.update(text="print this page", icon="fas fa-print",
                              tooltip="Print this web page (or save it as a PDF)")
        book_pdf = getattr(app.config, "book_pdf", "")
        if book_pdf:  # make pdf has printed the whole book (sphinx_print copies it)
            group["buttons"].append(
                {"type": "link", "url": pathto(book_pdf, 1), "text": "book (.pdf)",
                 "icon": "fas fa-file-pdf", "label": "download-book-pdf-button",
                 "tooltip": "The whole book as one PDF, as make pdf printed it"})
        group["buttons"].extend([
            {"type": "link", "url": pathto(f"{DOWNLOADS}/{wheel}", 1),
             "text": "library (.whl)", "icon": "fas fa-box",
             "tooltip": "The book's library, to pip install",
             "label": "download-wheel-button"},
            {"type": "link", "url": pathto(f"{DOWNLOADS}/{archive}", 1),
             "text": "book (.tar.gz)", "icon": "fas fa-file-zipper",
             "tooltip": "The whole book's source: make book, make test",
             "label": "download-archive-button"},
            {"type": "link",
             "url": (pathto(app.config.root_doc) if pagename != app.config.root_doc
                     else "") + "#run-the-code",
             "text": "how to run it", "icon": "fas fa-terminal",
             "tooltip": "The two commands that run the code",
             "label": "download-howto-button"},
        ])


class BookDownloads(SphinxDirective):
    """``{book-downloads}``: links to the wheel and the source archive, with the two
    commands that run a section's notebook and the two that build and check the
    book."""

    has_content = False

    def run(self):
        wheel, archive = _names(self.env.app)
        folder = archive.removesuffix("-source.tar.gz")
        relative = "../" * self.env.docname.count("/")
        container = nodes.container(classes=["book-downloads"])
        items = nodes.bullet_list()
        for name, what in ((wheel, "the library, as a wheel"),
                           (archive, "the book's whole source")):
            para = nodes.paragraph()
            para += nodes.reference("", name, refuri=f"{relative}{DOWNLOADS}/{name}",
                                    classes=["book-download"])
            para += nodes.Text(f": {what}.")
            items += nodes.list_item("", para)
        printed = nodes.list_item(classes=["book-download-pdf"])  # PdfItem fills it
        items += printed
        container += items
        section = nodes.paragraph(text=(
            "One section: download its notebook (the arrow at the top of its page, "
            ".ipynb), then run these three commands in the folder that holds it, with "
            "the notebook's own name (pip takes the library from this site):"))
        lines = "\n".join(install_commands(wheel, "04_kv_cache.ipynb"))
        commands = nodes.literal_block(lines, lines, language="bash",
                                       classes=["book-install"])
        sizes = nodes.paragraph(text=install_sizes())
        whole = nodes.paragraph(text=(
            "The whole book (the site, every notebook and the tests; it needs Python "
            "3.11, make and npm, as the README says):"))
        build = (f"tar xzf {archive} && cd {folder}\n"
                 "make book    # or: make test, make lab")
        container += [section, commands, sizes, whole,
                      nodes.literal_block(build, build, language="bash")]
        return [container]


class PdfItem(SphinxPostTransform):
    """The landing page's list of downloads names the whole book's PDF when ``make pdf``
    has printed it (``sphinx_print``'s ``book_pdf``), and drops its place otherwise: at
    write time, so a PDF printed after the page was read still shows."""

    default_priority = 900

    def run(self, **kwargs):
        book_pdf = getattr(self.config, "book_pdf", "")
        for item in list(self.document.findall(nodes.list_item)):
            if "book-download-pdf" not in item["classes"]:
                continue
            if not book_pdf or self.app.builder.format != "html":
                item.parent.remove(item)
                continue
            relative = "../" * self.env.docname.count("/")
            para = nodes.paragraph()
            para += nodes.reference("", Path(book_pdf).name,
                                    refuri=f"{relative}{book_pdf}",
                                    classes=["book-download"])
            para += nodes.Text(": the whole book as one PDF, to print or read offline.")
            item += para


def setup(app):
    app.add_directive("book-downloads", BookDownloads)
    app.add_post_transform(PdfItem)
    app.connect("html-page-context", _header_links, priority=502)  # after the theme
    app.connect("build-finished", _build_downloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
