"""JupyterLab for the book's authors, set up by the project, not by the author's own
settings.

    python -m book_machinery.lab [jupyter lab options]     # make lab

- A section's paired ``.md`` opens as a notebook (with its ``.ipynb`` outputs) on a
  double click: ``jupyter/labconfig/default_setting_overrides.json`` beside this module
  sets JupyterLab's default viewer for Markdown and MyST to jupytext's notebook. It is
  read through ``JUPYTER_CONFIG_PATH`` as a layer of defaults: nothing is written to the
  author's own Jupyter folders, and a choice the author makes in Lab's settings still
  wins.
- What Lab writes as it runs (its workspaces, the running server's files, the record of
  which notebooks are trusted and its secret) goes to ``.cache/lab`` in the repository,
  not to the author's home folder.
- It opens ``book/chapters``.
- A section's prose reads as on the site (``lab_prose``): the same layer enables that
  server extension (``jupyter/jupyter_server_config.d``), and Lab loads the markdown
  renderer that asks it from ``.cache/lab/labextensions`` (``lab_extension/``, built
  from npm by ``make setup``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .execute import ROOT

__all__ = ["LAB_CONFIG", "environment", "command", "main"]

LAB_CONFIG = Path(__file__).with_name("jupyter")
"""The project's Jupyter configuration layer (a ``labconfig`` folder)."""
STATE = ROOT / ".cache" / "lab"
"""Where Lab's own files go while it runs."""
EXTENSIONS = STATE / "labextensions"
"""Where ``make setup`` builds the book's Lab extension (``book-machinery-lab/``, from
``lab_extension/`` by @jupyter/builder in ``.cache/lab/extension-build``)."""


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment JupyterLab runs in: ``base`` (this process's) with the project's
    configuration layer first on ``JUPYTER_CONFIG_PATH``, and workspaces and runtime
    files under ``.cache/lab``."""
    env = dict(os.environ if base is None else base)
    paths = [str(LAB_CONFIG), *filter(None, env.get("JUPYTER_CONFIG_PATH", "").split(
        os.pathsep))]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(STATE / "workspaces")
    env["JUPYTER_RUNTIME_DIR"] = str(STATE / "runtime")
    return env


def command(extra: list[str], folder: Path = ROOT / "book" / "chapters") -> list[str]:
    """The command that starts JupyterLab on ``folder`` (the book's chapters)."""
    root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    STATE.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-m", "jupyterlab", *root,
            f"--ServerApp.root_dir={folder}",
            f"--NotebookNotary.db_file={STATE / 'nbsignatures.db'}",
            f"--NotebookNotary.secret_file={STATE / 'notebook_secret'}",
            f"--LabApp.extra_labextensions_path={EXTENSIONS}",
            # jupyter-lsp would ask npm where its global packages are (logs in ~/.npm)
            "--LanguageServerManager.autodetect=False", *extra]


def main(argv: list[str]) -> int:
    """Start JupyterLab (replaces this process); every option but ``--help`` goes on to
    ``jupyter lab``."""
    ap = argparse.ArgumentParser(
        prog="python -m book_machinery.lab", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Any other option is JupyterLab's own (python -m jupyterlab --help).")
    _, extra = ap.parse_known_args(argv)
    cmd = command(extra)
    os.execve(cmd[0], cmd, environment())
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
