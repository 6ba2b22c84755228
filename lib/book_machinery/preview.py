"""See an edited section as its reader will, live: the site served on this machine,
rebuilt when a file changes, reloaded in the browser.

    python -m book_machinery.preview                  # http://127.0.0.1:8000/
    python -m book_machinery.preview --port 8123
    python -m book_machinery.preview --source DIR --path-output OUT   # another copy

1. The book's configuration (``_config.yml``, read by Jupyter Book's own
   ``get_final_config``) is written as a Sphinx ``conf.py`` under ``.cache/preview`` (or
   OUT), so sphinx-autobuild runs the very build ``make book`` runs, into
   ``book/_build/html`` (or OUT/_build/html).
2. A section's text is its paired ``.md``, but the site reads the ``.ipynb``: when a
   paired ``.md`` is saved, it is executed again (``execute.Kernel``, one kernel kept
   warm between edits) and its ``.ipynb`` rewritten; sphinx-autobuild sees the notebook
   change, rebuilds the pages that changed and tells the browser to reload. Any other
   file of the book (a plain page, the bibliography, the CSS) is rebuilt directly.
3. Nothing is fetched from the network: the reload script is served by the preview
   itself. A change to the library (``lib/``) is not re-run into every notebook: run
   ``make execute`` for that.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from .execute import ROOT, Kernel, is_notebook_text
from .sphinx_site import paired_texts

__all__ = ["write_conf", "Reexecutor", "main"]


PATHS = ("html_static_path", "templates_path", "html_extra_path", "bibtex_bibfiles",
         "html_favicon", "html_logo")
"""Configuration values that name files of the book."""


def write_conf(source: Path, folder: Path) -> Path:
    """Write the book's Sphinx configuration, as Jupyter Book computes it from
    ``source/_config.yml`` and ``source/_toc.yml``, to ``folder/conf.py``."""
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(
        user_yaml=source / "_config.yml",
        sourcedir=source,
        cli_config={"external_toc_path": str(source / "_toc.yml"),
                    "latex_individualpages": False},
    )
    for key in PATHS:  # Sphinx reads these relative to conf.py's folder, not the book's
        value = config.get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            config[key] = str(source / value)
        elif isinstance(value, list):
            config[key] = [
                str(source / v) if isinstance(v, str) and not Path(v).is_absolute()
                else v
                for v in value
            ]
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Written by book_machinery.preview from _config.yml: do not edit."]
    lines += [f"{key} = {config[key]!r}" for key in sorted(config)]
    (folder / "conf.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "conf.py"


class Reexecutor(threading.Thread):
    """Watch the paired ``.md`` texts; execute each one that is saved again into its
    ``.ipynb`` (one kernel, kept between edits)."""

    def __init__(self, source: Path) -> None:
        super().__init__(daemon=True)
        self.source = source
        self.kernel: Kernel | None = None

    def run(self) -> None:
        from watchfiles import watch

        for changes in watch(self.source, recursive=True,
                             watch_filter=lambda _, path: path.endswith(".md")):
            for path in sorted({Path(p) for _, p in changes}):
                if path.exists() and path.with_suffix(".ipynb").exists() and (
                    is_notebook_text(path)
                ):
                    self._execute(path)

    def close(self) -> None:
        """Stop the kept kernel, if one was started."""
        if self.kernel is not None:
            self.kernel.close()
            self.kernel = None

    def _execute(self, md: Path) -> None:
        start = time.perf_counter()
        try:
            if self.kernel is None:
                self.kernel = Kernel()
            self.kernel.run(md)
            print(f"[preview] {md.name} executed again in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        except Exception as exc:  # the author sees why, and the preview keeps going
            print(f"[preview] {md.name} did not run: {exc}", flush=True)
            self.close()


def main(argv: list[str]) -> int:
    """The command line (see the module's docstring)."""
    ap = argparse.ArgumentParser(
        prog="python -m book_machinery.preview", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--source", type=Path, default=ROOT / "book")
    ap.add_argument("--path-output", type=Path, default=None,
                    help="build into PATH/_build (default: the book's own _build)")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args(argv)
    source = args.source.resolve()
    build = (args.path_output.resolve() if args.path_output else source) / "_build"
    conf = write_conf(source, (args.path_output.resolve() if args.path_output
                               else ROOT / ".cache") / "preview")
    from sphinx_autobuild.__main__ import main as autobuild

    reexecutor = Reexecutor(source)
    reexecutor.start()
    ignored = [str(source / p) for p in paired_texts(source)] + [str(build)]
    print(f"[preview] http://{args.host}:{args.port}/ (save a section's .md to see it "
          "again; Ctrl-C stops)", flush=True)
    try:  # uvicorn returns on Ctrl-C or SIGTERM; the kept kernel is stopped with it
        autobuild([
            str(source), str(build / "html"), "-c", str(conf.parent),
            "-d", str(build / ".doctrees"),
            "--host", args.host, "--port", str(args.port),
            *[arg for path in ignored for arg in ("--ignore", path)],
        ])
    finally:
        reexecutor.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
