"""Every figure is placed with a caption, described in alt text with its numbers, and its cell prints
the numbers it draws."""
import json
import re

import pytest

from book_files import ROOT, paired_notebooks


def figures(nb):
    """(glue key, alt text, the cell's stdout) for every glued figure in a stored notebook."""
    for cell in nb["cells"]:
        stdout = "".join("".join(o["text"]) for o in cell.get("outputs", []) if o.get("name") == "stdout")
        for o in cell.get("outputs", []):
            if "image/png" in o.get("data", {}) and "scrapbook" in o.get("metadata", {}):
                alt = o["metadata"].get("image/png", {}).get("alt", "")
                yield o["metadata"]["scrapbook"]["name"], alt, stdout


@pytest.mark.parametrize("md", paired_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_figures_are_placed_described_and_printed(md):
    nb = json.loads(md.with_suffix(".ipynb").read_text())
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    placed = dict(re.findall(r"```\{glue:figure\}\s+(\S+)\n((?:.|\n)*?)```", markdown))
    for key, alt, stdout in figures(nb):
        assert key in placed, f"{md.name}: figure {key!r} is glued but never placed with {{glue:figure}}"
        body = placed[key]
        assert ":name:" in body, f"{md.name}: figure {key!r} has no :name: to refer to it by"
        caption = "\n".join(l for l in body.splitlines() if l.strip() and not l.startswith(":"))
        assert "{glue:text}" in caption, f"{md.name}: the caption of {key!r} states no computed number"
        assert len(alt) >= 60 and re.search(r"\d", alt), f"{md.name}: alt text of {key!r} lacks its numbers: {alt!r}"
        assert re.search(r"\d", stdout), f"{md.name}: the cell drawing {key!r} prints none of its numbers"
    glued = {key for key, _, _ in figures(nb)}
    assert set(placed) <= glued, f"{md.name}: placed but never drawn: {set(placed) - glued}"
