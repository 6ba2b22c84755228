"""No hand-typed results in the prose: every number a reader sees is computed by the code, or
is an input the code states where a reader sees it.

A markdown cell (or a page of plain markdown) may contain a number only
- inside a role such as {glue:text}`key:,` or {doc}`04_kv_cache` (the number is computed, or is a
  file name),
- inside math ($...$ or $$...$$), which states formulas rather than results,
- inside inline code or a directive's option line (":name: fig-1"),
- in the short, reviewed allow-list below,
- or where it is a **stated input**: a number the notebook assigns, as a literal, to a name at the
  top level of a cell the reader sees (``factor = 4``, ``B, n = 8, 512``, ``lengths = [512,
  2048]``; not in a folded or removed cell). The prose may repeat such a number ("a factor of 4",
  "a batch of 8"), since it is the code's own input, typed once in the code and once in the prose.

Results stay computed: a typed number that equals no stated input fails, and so does one that
equals a stated input *and* a result the notebook glues under another name (the reader could not
tell which it is: glue it, {glue:text}`B`). The failure names the file, the line and the number.
"""
import ast
import re
from functools import lru_cache

import jupytext
import pytest

from book_files import ROOT, glued, is_notebook_text, paired_notebooks, plain_pages, stored

pytestmark = pytest.mark.notebooks

# Reviewed exceptions: (regex, why it is not a result of arithmetic).
ALLOW = [
    (r"\bMathJax \d\b", "a software version"),
    (r"\bJupyter Book \d(?:\.x)?\b", "a software version"),
    (r"\b1F1B\b", "a pipeline schedule's name (one forward, one backward)"),
]

STRIP = [
    r"\$\$.*?\$\$",                      # display math
    r"\$[^$\n]+\$",                      # inline math
    r"\{[\w:-]+\}`[^`]*`",               # roles: {glue:text}`key:,`, {doc}`..`, {numref}`..`
    r"``[^`]*``|`[^`\n]*`",              # inline code
    r"\]\([^)]*\)",                      # link targets
    r"^```.*$|^:::.*$",                  # directive fences and their arguments
    r"^:[\w-]+:.*$",                     # directive options
    r"<[^>]+>",                          # html tags
]

HIDDEN = {"hide-input", "remove-input", "remove-cell", "hide-cell"}


def value_of(number: str) -> float | None:
    """The value a number typed in prose stands for ("1,024" -> 1024, "0.9" -> 0.9)."""
    try:
        return float(number.replace(",", ""))
    except ValueError:
        return None


def _literal_numbers(node) -> list[float]:
    """The numbers a literal holds: a number, or a list or tuple of them (else nothing)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    return []


def inputs_in(code: str) -> dict[str, list[float]]:
    """The stated inputs of one cell's code: each name assigned a number literal (or a list or
    tuple of them) at the top level, with the numbers."""
    source = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, list[float]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            pairs = []
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    pairs.append((target.id, statement.value))
                elif isinstance(target, ast.Tuple) and isinstance(statement.value, ast.Tuple):
                    pairs += [(t.id, v) for t, v in zip(target.elts, statement.value.elts)
                              if isinstance(t, ast.Name)]
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            pairs = [(statement.target.id, statement.value)]
        else:
            continue
        for name, value in pairs:
            numbers = _literal_numbers(value)
            if numbers:
                found[name] = numbers
    return found


@lru_cache(maxsize=None)
def notebook_cells(path):
    return tuple(jupytext.read(path).cells) if is_notebook_text(path) else ()


def stated_inputs(path) -> dict[str, list[float]]:
    """Every stated input of a notebook: the number literals assigned to names in the cells a
    reader sees (none for a plain page)."""
    found: dict[str, list[float]] = {}
    for cell in notebook_cells(path):
        if cell.cell_type == "code" and not set(cell.metadata.get("tags", [])) & HIDDEN:
            found.update(inputs_in(cell.source))
    return found


def _numbers_in(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, str):
        return [v for v in (value_of(m) for m in re.findall(r"\d[\d,.]*\d|\d", value)) if v is not None]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _numbers_in(v)]
    return []


def glued_results(path, inputs) -> dict[float, str]:
    """The numbers a notebook glues under names that are not its inputs, each with a name it is
    glued under (a number inside a glued text, such as '768 MiB', counts too)."""
    if not is_notebook_text(path):
        return {}
    name = str(path.relative_to(ROOT / "book" / "chapters").with_suffix(""))
    found = {}
    for key, value in glued(stored(name)).items():
        if key in inputs:
            continue
        for number in _numbers_in(value):
            found.setdefault(number, key)
    return found


def offending_numbers(text: str, inputs: dict[str, list[float]] | None = None,
                      results: dict[float, str] | None = None):
    """Yield (line number, number, why) for each number left after stripping what is allowed
    that is not a stated input, or is one that a glued result shares."""
    inputs, results = inputs or {}, results or {}
    by_value: dict[float, str] = {}
    for name, values in inputs.items():
        for v in values:
            by_value.setdefault(v, name)
    for pattern in STRIP:
        text = re.sub(pattern, lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S | re.M)
    for pattern, _why in ALLOW:
        text = re.sub(pattern, lambda m: " " * len(m.group()), text, flags=re.I)
    for m in re.finditer(r"\d[\d,.]*", text):
        number = m.group().rstrip(".,")
        line = text.count("\n", 0, m.start()) + 1
        value = value_of(number)
        if value is None or value not in by_value:
            yield line, number, "typed by hand: glue it from code, or state it as an input in a visible cell"
        elif value in results:
            yield line, number, (f"the input {by_value[value]} is {number}, and so is the result "
                                 f"{results[value]}: glue the one meant ({{glue:text}}`{by_value[value]}`)")


@lru_cache(maxsize=None)
def markdown_of(path):
    """(first line in the file, text) for each markdown cell, or the whole page if plain (read once
    for the two tests below)."""
    if not is_notebook_text(path):
        return ((1, path.read_text()),)
    source = path.read_text()
    out = []
    for cell in notebook_cells(path):
        if cell.cell_type == "markdown":
            at = source.find(cell.source)
            out.append((source.count("\n", 0, at) + 1 if at >= 0 else 0, cell.source))
    return tuple(out)


@pytest.mark.parametrize("path", paired_notebooks() + plain_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_hand_typed_numbers(path):
    inputs = stated_inputs(path)
    results = glued_results(path, inputs)
    found = [
        f"{path.relative_to(ROOT)}:{start + line - 1}: {number} ({why})"
        for start, text in markdown_of(path)
        for line, number, why in offending_numbers(text, inputs, results)
    ]
    assert not found, "numbers in the prose that the code does not give:\n" + "\n".join(found)


def test_the_checker_catches_a_typed_number():
    text = "The cache holds 98,304 bytes, see section 4 and {glue:text}`kv:,` and $n(n+1)/2$."
    assert [n for _, n, _ in offending_numbers(text)] == ["98,304", "4"]


def test_stated_inputs_may_be_typed_and_results_may_not():
    code = "factor = 4\nB, n = 8, 1024\nlengths = [512, 2048]\nL = model.layers\nname = 'x'\n"
    inputs = inputs_in(code)
    assert inputs == {"factor": [4.0], "B": [8.0], "n": [1024.0], "lengths": [512.0, 2048.0]}
    text = "A factor of 4 for a batch of 8 at 1,024 tokens (or 512 and 2,048) takes 24 layers."
    assert [n for _, n, _ in offending_numbers(text, inputs)] == ["24"]   # model.layers is a result
    # an input that a result shares is not told apart: it must be glued
    ambiguous = list(offending_numbers("a batch of 8", inputs, results={8.0: "kv_heads"}))
    assert [(n, "kv_heads" in why) for _, n, why in ambiguous] == [("8", True)]


def test_inputs_count_only_where_a_reader_sees_them(tmp_path):
    md = tmp_path / "x.md"
    md.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        "```{code-cell} ipython3\nB = 8\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\n\nwidth = 7\n```\n\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\n\nfactor = 4\n```\n")
    assert stated_inputs(md) == {"B": [8.0]}


@pytest.mark.parametrize("path", paired_notebooks() + plain_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_to_other_pages_say_where_they_go(path):
    """A {doc} link carries its own words ({doc}`the cache section <04_kv_cache>`), so a page title
    is never dropped into the middle of a sentence; sections, figures and equations are referred
    to by number with {numref} and {eq}."""
    bare = [m.group() for _, text in markdown_of(path) for m in re.finditer(r"\{doc\}`[^`<]*`", text)]
    assert not bare, f"{path.relative_to(ROOT)}: links without their own words: {bare}"
