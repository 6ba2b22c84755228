"""Every figure is drawn in a folded cell that only draws, placed once with a numbered caption
that states computed numbers, described in alt text with its numbers, stored as SVG (vector, sharp
at any zoom and in print) with its width and smallest letters, and the numbers it draws are printed
by a cell before it."""
import re

import pytest

from book_files import ROOT, paired_notebooks, stored
from book_machinery.execute import MEASURED

pytestmark = pytest.mark.notebooks


IMAGES = ("image/svg+xml", "image/png", "image/jpeg")


def figure_cells(nb):
    """(index, glue key, mime type, its metadata, output, cell) for every cell that glues a figure."""
    for i, cell in enumerate(nb["cells"]):
        for o in cell.get("outputs", []):
            mime = next((m for m in IMAGES if m in o.get("data", {})), None)
            if mime and "scrapbook" in o.get("metadata", {}):
                yield i, o["metadata"]["scrapbook"]["name"], mime, o["metadata"].get(mime, {}), o, cell


def check_svg(key, mime, meta, output):
    """A figure is SVG, declares the width its metadata gives, says how small its letters are and
    carries no date."""
    assert mime == "image/svg+xml", f"figure {key!r} is stored as {mime}, not SVG: draw it with figures.show"
    svg = "".join(output["data"][mime])
    width = re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', svg)
    assert width and abs(float(width.group(1)) - meta.get("width_pt", 0)) < 0.01, (
        f"figure {key!r}: the width in its metadata is not the SVG's own")
    assert meta.get("smallest_font_pt", 0) > 0, f"figure {key!r} does not say how small its letters are"
    assert "<dc:date>" not in svg, f"figure {key!r} carries a date: its bytes change on every run"


def name(md):
    return str(md.relative_to(ROOT / "book" / "chapters").with_suffix(""))


@pytest.mark.parametrize("md", paired_notebooks(), ids=name)
def test_figures_are_placed_described_and_printed(md):
    nb = stored(name(md))
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    placed = dict(re.findall(r"```\{glue:figure\}\s+(\S+)\n((?:.|\n)*?)```", markdown))
    drawn = set()
    for i, key, mime, meta, output, cell in figure_cells(nb):
        drawn.add(key)
        alt = meta.get("alt", "")
        if not (md == MEASURED and mime == "image/png"):  # re-made only by `make measure`
            check_svg(key, mime, meta, output)
        assert key in placed, f"figure {key!r} is glued but never placed with {{glue:figure}}"
        body = placed[key]
        assert re.search(r"^:name: fig-", body, re.M), f"figure {key!r} has no :name: fig-... to refer to it by"
        caption = "\n".join(line for line in body.splitlines() if line.strip() and not line.startswith(":"))
        assert "{glue:text}" in caption, f"the caption of {key!r} states no computed number"
        assert len(alt) >= 60 and re.search(r"\d", alt), f"alt text of {key!r} lacks its numbers: {alt!r}"
        tags = set(cell["metadata"].get("tags", []))
        assert {"hide-input", "remove-output"} <= tags, (
            f"the cell drawing {key!r} must be tagged hide-input and remove-output (code one click away, "
            f"the figure shown once, where its caption is), not {sorted(tags)}")
        assert not any(o.get("output_type") == "stream" for o in cell["outputs"]), (
            f"the cell drawing {key!r} prints: print its numbers with record() in a cell before it")
        printed_before = any(o.get("name") == "stdout" for c in nb["cells"][:i] for o in c.get("outputs", []))
        assert printed_before, f"no cell before {key!r} prints the numbers it draws"
    assert set(placed) <= drawn, f"placed but never drawn: {set(placed) - drawn}"
