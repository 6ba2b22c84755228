"""The bibliography file on its own, before any build: it parses, holds each key once, gives
every entry a way to find the work, and no two entries the same author-year label (the
site's citation style, ``book_machinery.sphinx_citations``, says the same at build time;
this test says it in a second, where a bad merge shows first)."""

from __future__ import annotations

import re
from collections import Counter

import pybtex.database
import pytest

from book_files import BOOK

BIB = BOOK / "references.bib"


def test_the_bibliography_parses_with_each_key_once():
    text = BIB.read_text()
    keys = re.findall(r"(?m)^@\w+\{([^,\s]+),", text)
    assert [k for k, n in Counter(keys).items() if n > 1] == []
    data = pybtex.database.parse_string(text, "bibtex")  # raises on a repeated key too
    assert sorted(data.entries) == sorted(keys)


def test_every_entry_can_be_found():
    data = pybtex.database.parse_file(BIB)
    lost = [
        key
        for key, entry in data.entries.items()
        if not {"eprint", "doi", "url"} & {f.lower() for f in entry.fields}
    ]
    assert lost == [], f"entries with no eprint (arXiv), doi or url: {lost}"


@pytest.mark.site  # imports Sphinx (two seconds): with the site's tests
def test_no_two_entries_share_a_label():
    from book_machinery.sphinx_citations import label_of

    data = pybtex.database.parse_file(BIB)
    labels = Counter(label_of(entry) for entry in data.entries.values())
    assert [label for label, n in labels.items() if n > 1] == []
