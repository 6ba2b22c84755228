"""The README's worked examples are what the calculator prints: each ``$ python -m
transformer_calculator ...`` command in a ``text`` block is run, and every line shown
under it must appear in its output, in order; a line ``...`` stands for lines left out."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from transformer_calculator.command_line.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
PROMPT = "$ python -m transformer_calculator "


def examples(text: str) -> list[tuple[str, list[str]]]:
    """Each command in the README's text blocks with the lines shown under it."""
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```text\n(.*?)```", text, flags=re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith(PROMPT):
                if found:
                    found[-1][1].append(lines[i])
                i += 1
                continue
            command = lines[i][len(PROMPT):]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + lines[i].strip()
            found.append((command, []))
            i += 1
    return found


def segments(shown: list[str]) -> list[list[str]]:
    """The shown lines cut at each ``...``, without the blank lines that end them."""
    parts: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            parts.append([])
        else:
            parts[-1].append(line)
    for part in parts:
        while part and not part[-1].strip():
            part.pop()
    return [p for p in parts if p]


def run(command: str) -> list[str]:
    """The lines the calculator prints for ``command``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(shlex.split(command))
    assert code == 0, command
    return out.getvalue().splitlines()


EXAMPLES = examples(README.read_text())


def test_the_readme_shows_worked_examples():
    assert len(EXAMPLES) >= 4
    assert {c.split()[0] for c, _ in EXAMPLES} >= {"report", "train"}


@pytest.mark.parametrize(
    "command,shown", EXAMPLES, ids=[c[:40] for c, _ in EXAMPLES]
)
def test_a_worked_example_is_what_the_calculator_prints(command, shown):
    output = run(command)
    at = 0
    for part in segments(shown):
        starts = [
            i
            for i in range(at, len(output) - len(part) + 1)
            if output[i : i + len(part)] == part
        ]
        assert starts, (
            f"{command}: these shown lines are not in its output, in order:\n"
            + "\n".join(part)
        )
        at = starts[0] + len(part)


def test_the_readme_gives_the_install_the_site_gives():
    """The README's commands for a section and their download sizes are the landing page's
    (``sphinx_downloads``, where the sizes were measured): a CPU-only PyTorch first."""
    from book_machinery.sphinx_downloads import TORCH_CPU_INDEX, gigabytes, install_commands

    text = README.read_text()
    for command in install_commands("<the wheel>", "<section>.ipynb"):
        assert command in text, f"the README does not give: {command}"
    assert f"--index-url {TORCH_CPU_INDEX}" in text
    for route in ("cpu", "pypi"):
        assert f"about {gigabytes(route)}" in text, f"the README does not say what {route} downloads"
