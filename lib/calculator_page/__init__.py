"""The calculator in the reader's browser: the Sphinx directive that writes its form,
the bundle of the calculator's own modules that Pyodide runs, and the page's assets.

It reads the calculator and the teaching formulas; the book's machinery never imports
it (Sphinx loads it as an extension named in ``book/_config.yml``).
"""
