"""Every TeX macro the book writes is one the site's own MathJax typesets offline.

The site serves MathJax's tex-mml-chtml.js alone (the Makefile copies that one file and
its fonts). Its TeX input holds the base, AMS, newcommand and configmacros packages; a
macro of any other package is loaded on first use from MathJax's ``input/tex/extensions``
folder, which the site does not serve, so such a page never typesets (chapter 2 section
5's ``\\boldsymbol`` did that: the site test only timed out). This names the macro and the
file instead."""
from __future__ import annotations

import re
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "book"

AUTOLOADED = {
    "boldsymbol": "boldsymbol", "bm": "boldsymbol", "cancel": "cancel",
    "bcancel": "cancel", "xcancel": "cancel", "cancelto": "cancel", "bbox": "bbox",
    "enclose": "enclose", "ce": "mhchem", "pu": "mhchem", "bra": "braket",
    "ket": "braket", "braket": "braket", "Bra": "braket", "Ket": "braket",
    "coloneqq": "mathtools", "eqqcolon": "mathtools", "mathclap": "mathtools",
    "prescript": "mathtools", "shoveleft": "mathtools", "dv": "physics",
    "pdv": "physics", "abs": "physics", "norm": "physics", "qty": "physics",
    "upalpha": "upgreek", "upbeta": "upgreek", "upmu": "upgreek", "degree": "gensymb",
    "celsius": "gensymb", "ohm": "gensymb", "micro": "gensymb", "textsf": "textmacros",
    "xrightleftharpoons": "extpfeil", "xtwoheadrightarrow": "extpfeil",
    "centernot": "centernot", "cases": "cases", "numcases": "cases", "href": "html",
    "class": "html", "cssId": "html", "style": "html", "verb": "verb",
    "colorbox": "color", "fcolorbox": "color", "definecolor": "color",
}
"""Macros MathJax 3 loads from an extension on first use, and the extension."""

MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|```\{math\}.*?```", re.S)


def test_no_macro_needs_an_extension_the_site_does_not_serve():
    found = []
    for md in sorted(BOOK.rglob("*.md")):
        if "_build" in md.parts:
            continue
        for math in MATH.findall(md.read_text(encoding="utf-8")):
            for name in re.findall(r"\\([A-Za-z]+)", math):
                if name in AUTOLOADED:
                    found.append(f"{md.relative_to(BOOK)}: \\{name} ({AUTOLOADED[name]})")
    assert not found, "macros the offline MathJax cannot load: " + "; ".join(found[:10])
