"""The author's tools work: a Jupyter server with jupytext opens a paired .md as a notebook with outputs."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from book_files import ROOT

pytestmark = pytest.mark.site

TOKEN = "book-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    runtime = tmp_path_factory.mktemp("jupyter-runtime")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={ROOT}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**__import__("os").environ, "JUPYTER_RUNTIME_DIR": str(runtime)},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("the Jupyter server did not start")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def test_paired_md_opens_as_a_notebook_with_its_outputs(server):
    path = "book/chapters/training/04_kv_cache.md"
    model = get(f"{server}/api/contents/{path}?type=notebook&content=1&token={TOKEN}")
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code and all(c["outputs"] for c in code), "a code cell came without its stored outputs"
    pngs = [o for c in code for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert pngs, "the figures did not come with the notebook"
    assert "jupytext" in model["content"]["metadata"]


def test_the_contents_manager_is_jupytexts(server):
    listing = get(f"{server}/api/contents/book/chapters/training?token={TOKEN}")
    kinds = {item["name"]: item["type"] for item in listing["content"]}
    assert kinds.get("04_kv_cache.md") == "notebook"
