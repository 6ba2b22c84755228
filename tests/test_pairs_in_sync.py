"""Every .md/.ipynb pair holds the same cells: same types, same sources, same tags."""
import jupytext
import pytest

from book_files import ROOT, paired_notebooks

pytestmark = pytest.mark.notebooks


def cells(nb):
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", []))) for c in nb.cells]


@pytest.mark.parametrize("md", paired_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pair_in_sync(md):
    ipynb = md.with_suffix(".ipynb")
    assert ipynb.exists(), f"{md.name} has no paired .ipynb: run python -m book_machinery.execute {md.relative_to(ROOT)}"
    text, stored = cells(jupytext.read(md)), cells(jupytext.read(ipynb))
    for i, (a, b) in enumerate(zip(text, stored)):
        assert a == b, f"cell {i} of {md.name} differs from its .ipynb: re-run python -m book_machinery.execute on it"
    assert len(text) == len(stored), f"{md.name} has {len(text)} cells, its .ipynb {len(stored)}"


def test_every_notebook_is_in_the_contents():
    toc = (ROOT / "book" / "_toc.yml").read_text()
    missing = [str(p.relative_to(ROOT / "book")) for p in paired_notebooks()
               if str(p.relative_to(ROOT / "book").with_suffix("")) not in toc]
    assert not missing, f"notebooks not listed in book/_toc.yml: {missing}"


def test_every_notebook_was_executed_in_order_by_the_book_executor():
    import json

    for md in paired_notebooks():
        nb = json.loads(md.with_suffix(".ipynb").read_text())
        counts = [c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code"]
        assert counts == list(range(1, len(counts) + 1)), f"{md.name}: stored outputs are not from one clean run"
        ids = [c.get("id") for c in nb["cells"]]
        assert ids == [f"cell-{i:03d}" for i in range(len(ids))], (
            f"{md.name}: cell ids are not the executor's stable ones (run python -m book_machinery.execute on it)")
        timed = [c for c in nb["cells"] if "execution" in c.get("metadata", {})]
        assert not timed, f"{md.name}: cells carry execution timestamps (run python -m book_machinery.execute on it)"
