"""The author's tools work, set up by the project alone.

- ``make lab`` (``book_machinery.lab``): JupyterLab, started with the project's configuration layer
  and a home folder of its own, opens a paired .md as a notebook with its outputs by default, and
  writes nothing to the user's Jupyter folders.
- ``make preview`` (``book_machinery.preview``): an edited section's .md is executed again and the
  page a browser has open reloads with the edit, all on this machine.
"""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from book_files import BOOK, ROOT
from book_machinery import lab

pytestmark = pytest.mark.site

TOKEN = "book-test-token"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, seconds: float, proc) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server stopped with code {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"nothing answered at {url} within {seconds} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """JupyterLab as `make lab` starts it, with a home and a user configuration folder of its own
    (watched: nothing may be written there) and its workspaces in a scratch folder."""
    port, home = free_port(), tmp_path_factory.mktemp("home")
    env = lab.environment()
    env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
               JUPYTER_RUNTIME_DIR=str(tmp_path_factory.mktemp("runtime")),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path_factory.mktemp("workspaces")))
    cmd = lab.command(["--no-browser", f"--port={port}", "--ip=127.0.0.1",
                       f"--IdentityProvider.token={TOKEN}"], folder=ROOT)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/api/status?token={TOKEN}", 40, proc)
        yield base, home
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def test_paired_md_opens_as_a_notebook_with_its_outputs(server):
    base, _ = server
    path = "book/chapters/training/04_kv_cache.md"
    model = get(f"{base}/api/contents/{path}?type=notebook&content=1&token={TOKEN}")
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code and any(c["outputs"] for c in code), "the code cells came without their stored outputs"
    figures = [o for c in code for o in c["outputs"] if "image/svg+xml" in o.get("data", {})]
    assert figures, "the figures did not come with the notebook"
    assert "jupytext" in model["content"]["metadata"]


def test_the_contents_manager_is_jupytexts(server):
    base, _ = server
    listing = get(f"{base}/api/contents/book/chapters/training?token={TOKEN}")
    kinds = {item["name"]: item["type"] for item in listing["content"]}
    assert kinds.get("04_kv_cache.md") == "notebook"


def test_a_double_click_opens_md_as_a_notebook_and_no_user_setting_is_written(server):
    base, home = server
    settings = get(f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin?token={TOKEN}")
    # the project's layer sets the schema's default; the user's own settings (empty here) would win
    viewers = {**settings["schema"]["properties"]["defaultViewers"]["default"],
               **settings["settings"].get("defaultViewers", {})}
    assert viewers.get("markdown") == viewers.get("myst") == "Jupytext Notebook", viewers
    written = [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()]
    assert not written, f"JupyterLab wrote into the user's folders: {written}"


def test_make_lab_changes_no_user_setting():
    """The lab target runs the project's module, never jupytext-config (which edits a per-user file)."""
    target = (ROOT / "Makefile").read_text().split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "book_machinery.lab" in target and "jupytext-config" not in target


@pytest.fixture
def small_book(tmp_path) -> Path:
    """A copy of the book with one section in its contents (a preview of the whole book builds
    every page first, which is not what this test is about)."""
    book = tmp_path / "book"
    book.mkdir()
    for name in ("_config.yml", "references.bib", "glossary.md", "jupytext.toml"):
        shutil.copy2(BOOK / name, book / name)
    shutil.copytree(BOOK / "_static", book / "_static")
    shutil.copytree(BOOK / "_mathjax", book / "_mathjax")
    section = book / "chapters" / "why_won"
    section.mkdir(parents=True)
    for suffix in (".md", ".ipynb"):
        shutil.copy2(BOOK / "chapters" / "why_won" / f"07_what_won{suffix}", section / f"07_what_won{suffix}")
    (book / "intro.md").write_text("# A small copy\n\nOne section of the book, to preview.\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n"
                                   "  - file: chapters/why_won/07_what_won\n  - file: glossary\n")
    return book


@pytest.mark.slow(seconds=18)
def test_preview_shows_an_edit_live(small_book, tmp_path):
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed: `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "book_machinery.preview", "--source", str(small_book),
         "--path-output", str(tmp_path / "out"), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    page_url = f"http://127.0.0.1:{port}/chapters/why_won/07_what_won.html"
    try:
        wait_for(page_url, 120, proc)
        md = small_book / "chapters" / "why_won" / "07_what_won.md"
        added = "An edit the author has just saved, shown without a rebuild by hand."
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
            page = browser.new_page()
            outside = []
            page.on("request", lambda r: None if r.url.startswith((f"http://127.0.0.1:{port}/",
                                                                    f"ws://127.0.0.1:{port}/", "data:"))
                    else outside.append(r.url))
            page.goto(page_url)
            assert added not in page.inner_text("article")
            md.write_text(md.read_text() + f"\n{added}\n")
            page.wait_for_function(f"document.body !== null && document.body.innerText.includes({added!r})",
                                   timeout=150_000)  # the reload empties the page a moment
            browser.close()
        assert not outside, f"the preview asked the network for: {outside}"
        stored = json.loads(md.with_suffix(".ipynb").read_text())
        assert any(added in "".join(c["source"]) for c in stored["cells"]), "the .ipynb was not rewritten"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
