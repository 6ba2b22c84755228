"""Every section ends with exercises whose answers are computed and independently checked.

- Each numbered section of the two pages has between two and four ``exercise`` directives,
  each with a solution (``solution-start`` / ``solution-end``) holding a code cell.
- A solution glues its answers under keys starting ``ans_`` (an exercise's given values start
  ``ex_``). Every ``ans_`` key of every notebook has an independent check in
  ``tests/answers/`` (a ``CHECKS`` dictionary per section), and every check names a key that
  exists: an answer cannot go unchecked and a check cannot go stale.
"""
import importlib.util
import re

import pytest

from book_files import ROOT, glued, section_notebooks, stored

pytestmark = pytest.mark.notebooks

ANSWERS = ROOT / "tests" / "answers"


def name(md):
    return str(md.relative_to(ROOT / "book" / "chapters").with_suffix(""))


def all_checks() -> dict[str, set[str]]:
    """{notebook name: the answer keys its tests/answers module checks}."""
    found = {}
    for path in sorted(ANSWERS.glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found.setdefault(module.NOTEBOOK, set()).update(module.CHECKS)
    return found


@pytest.mark.parametrize("md", section_notebooks(), ids=name)
def test_each_section_has_two_to_four_exercises_with_computed_solutions(md):
    nb = stored(name(md))
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    labels = re.findall(r"```\{exercise\}\s*\n:label: (\S+)", text)
    assert 2 <= len(labels) <= 4, f"{len(labels)} exercises; every section has two to four"
    for label in labels:
        assert re.search(r"\{solution-start\} " + re.escape(label) + r"\s*\n:class: dropdown", text), (
            f"exercise {label} has no collapsed solution")
    answers = [k for k in glued(nb) if k.startswith("ans_")]
    assert len(answers) >= len(labels), f"{len(labels)} exercises but only {len(answers)} glued answers"


def test_every_answer_is_checked_and_every_check_has_an_answer():
    checks = all_checks()
    for md in section_notebooks():
        answers = {k for k in glued(stored(name(md))) if k.startswith("ans_")}
        checked = checks.get(name(md), set())
        assert answers <= checked, f"{name(md)}: answers with no check in tests/answers: {sorted(answers - checked)}"
        assert checked <= answers, f"{name(md)}: checks of answers that no longer exist: {sorted(checked - answers)}"
