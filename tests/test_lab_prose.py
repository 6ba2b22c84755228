"""A section's prose in JupyterLab (``book_machinery.lab_prose``), without a browser: the
server's renderer gives each role and directive the book uses the text the site gives it.
Glued text is formatted by myst-nb's own function; references take the numbers the site
build wrote (here a small stand-in table); a glued picture carries its number and caption;
a missing value is an error a reader sees, not a silent blank. The page itself, in Lab in
Chromium, is checked against the built site in tests/test_site.py."""
from __future__ import annotations

import base64
import re

import pytest
import yaml

from book_files import BOOK
from book_machinery import lab_prose, lab_server

pytestmark = pytest.mark.site   # the site's renderer, in its Lab form: not make check's

REFERENCES = {
    "targets": {
        "fig-kv-loop": {"doc": "chapters/training/04_kv_cache", "id": "fig-kv-loop",
                        "kind": "figure", "number": "1.16", "title": "the loop"},
        "sec-roofline": {"doc": "chapters/training/03_teacher_forcing", "id": "sec-roofline",
                         "kind": "section", "number": "1.3.3", "title": "the roofline"},
        "eq-kv-bytes": {"doc": "chapters/training/04_kv_cache", "id": "equation-eq-kv-bytes",
                        "kind": "equation", "number": "1.9", "title": ""},
        "ex-kv-serve": {"doc": "chapters/training/04_kv_cache", "id": "ex-kv-serve",
                        "kind": "exercise", "number": "1.12", "title": "Exercise"},
        "tab-your-refusals": {"doc": "chapters/appendix/01_your_model", "kind": "table",
                              "id": "tab-your-refusals", "number": "1", "title": "x"},
    },
    "docs": {"chapters/training/02_causal_mask": {"title": "The causal mask", "number": "1.2"}},
    "citations": {"pope2023efficiently": "Pope et al., 2023", "kwon2023efficient": "Kwon et al., 2023"},
    "terms": {"key-value cache": {"doc": "glossary", "id": "term-key-value-cache",
                                  "definition": "The keys and values kept."}},
    "numfig_format": {"figure": "Fig. %s", "table": "Table %s", "section": "Section %s",
                      "exercise": "Exercise %s"},
}
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
GLUE = {"n": {"text/plain": "8192"}, "share": {"text/plain": "0.9"},
        "word": {"text/plain": "'more'"},
        "fig_loop": {"image/svg+xml": SVG, "text/plain": "<Figure>",
                     "metadata": {"image/svg+xml": {"alt": "three rows"}}}}


def html(source: str) -> str:
    ctx = lab_prose.Context(glue=GLUE, references=REFERENCES, doc="chapters/training/04_kv_cache")
    return lab_prose.render(source, ctx)


def text(fragment: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", fragment).split())


def test_the_renderer_reads_markdown_as_the_site_does():
    configured = yaml.safe_load((BOOK / "_config.yml").read_text())["parse"]["myst_enable_extensions"]
    assert sorted(lab_prose.EXTENSIONS) == sorted(configured)


def test_glued_values_are_formatted_as_myst_nb_formats_them():
    out = html("{glue:text}`n:,` tokens at {glue:text}`share:.0%`, {glue:text}`word` than")
    assert text(out) == "8,192 tokens at 90%, more than"
    assert 'class="pasted-text book-glue-n"' in out


def test_references_take_the_sites_numbers_and_words():
    out = html("{numref}`fig-kv-loop` and {numref}`Section %s <sec-roofline>` and {eq}`eq-kv-bytes`"
               " and {doc}`the mask <02_causal_mask>` and {ref}`the loop <fig-kv-loop>`")
    assert text(out) == "Fig. 1.16 and Section 1.3.3 and (1.9) and the mask and the loop"
    assert 'href="03_teacher_forcing.md#sec-roofline"' in out and 'href="02_causal_mask.md"' in out


def test_citations_carry_the_bibliographys_labels_and_terms_their_definition():
    out = html("as {cite:p}`pope2023efficiently,kwon2023efficient` show, {cite:t}`pope2023efficiently`"
               " kept a {term}`key-value cache`")
    assert text(out) == "as [Pope et al., 2023, Kwon et al., 2023] show, Pope et al. [2023] kept a key-value cache"
    assert 'title="The keys and values kept."' in out


def test_a_glued_figure_carries_its_picture_number_and_caption():
    out = html("```{glue:figure} fig_loop\n:name: fig-kv-loop\n\nStep {glue:text}`n:,` looks back.\n```")
    assert 'id="fig-kv-loop"' in out and 'alt="three rows"' in out
    assert f'src="data:image/svg+xml;base64,{base64.b64encode(SVG.encode()).decode()}"' in out
    assert "Fig. 1.16 Step 8,192 looks back." in text(out)


def test_tables_exercises_and_equations_are_numbered():
    table = html("```{table} Three files.\n:name: tab-your-refusals\n\n| a | b |\n|---|---|\n| 1 | 2 |\n```")
    assert "Table 1 Three files." in text(table)
    exercise = html("```{exercise}\n:label: ex-kv-serve\n\nHow many fit?\n```")
    assert text(exercise).startswith("Exercise 1.12 How many fit?")
    solution = html("````{solution-start} ex-kv-serve\n:class: dropdown\n````")
    assert text(solution) == "Solution to Exercise 1.12"
    equation = html("$$\nb = 2 L\n$$ (eq-kv-bytes)")
    assert r"\tag{1.9}" in equation


def test_a_missing_value_is_an_error_a_reader_sees():
    out = html("{glue:text}`nowhere:,` and {numref}`fig-nowhere`")
    assert "no glued value called 'nowhere'" in out and "no target called 'fig-nowhere'" in out
    assert 'class="system-message"' in out or "system-message" in out


def test_the_server_answers_for_the_books_sections_only(tmp_path):
    assert lab_server.section_doc(BOOK / "chapters" / "training" / "04_kv_cache.md") == (
        "chapters/training/04_kv_cache")
    assert lab_server.section_doc(tmp_path / "elsewhere.md") is None


ROLE = re.compile(r"\{([a-z][\w:-]*)\}`")
DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{([\w:-]+)\}[^\n]*\n((?::[\w-]+:[^\n]*\n)*)", re.M)


def test_every_role_and_directive_a_section_uses_has_its_lab_renderer():
    """What a section's markdown cells use (code cells aside), Lab can render: each role, each
    directive and each directive option, so no reader of the section in Lab meets an error box
    where the site shows the text (a new one needs its renderer in lab_prose)."""
    from docutils.parsers.rst import directives, roles
    from docutils.parsers.rst.languages import en
    from docutils.utils import new_document

    from book_files import paired_notebooks

    document = new_document("<check>")
    used: dict[str, set] = {}
    missing = []
    for md in paired_notebooks():
        prose = re.sub(r"^```\{code-cell\}.*?^```", "", md.read_text(), flags=re.M | re.S)
        for name in ROLE.findall(prose):
            used.setdefault(f"role {name}", set()).add(md.stem)
            if roles.role(name, en, 0, document.reporter)[0] is None:
                missing.append((md.stem, f"role {name}"))
        for _, name, options in DIRECTIVE.findall(prose):
            found, _ = directives.directive(name, en, document)
            if found is None:
                missing.append((md.stem, f"directive {name}"))
                continue
            spec = getattr(found, "option_spec", None) or {}
            missing += [(md.stem, f"{name} :{o}:") for o in re.findall(r"^:([\w-]+):", options, re.M)
                        if o not in spec]
    assert {"role glue:text", "role numref", "role cite:p", "role term"} <= set(used)
    assert not missing, f"used in the book, with no renderer in Lab: {sorted(set(missing))}"
