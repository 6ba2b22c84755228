"""Repository-wide pytest set-up: the book's plugin (``book_machinery/pytest_plugin.py``)
runs nbval's kernels as the narrowest processor, compares pictures and alt text, keeps one
kernel per worker, marks the notebooks and runs the slow files first."""
pytest_plugins = ["book_machinery.pytest_plugin"]
