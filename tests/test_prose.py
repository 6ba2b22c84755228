"""Stating numbers: the glue format myst-nb reads, record's fixed printing, words from numbers."""
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

from book_machinery import prose


@pytest.fixture
def published(monkeypatch):
    """Every display message a call sends, as (data, metadata)."""
    shell = InteractiveShell.instance()
    sent = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, metadata=None, **kw: sent.append((data, metadata)))
    return sent


@pytest.mark.parametrize("value", [98_304, 0.123456789, "more", [1, 2.5]])
@pytest.mark.parametrize("display", [False, True])
def test_glue_writes_exactly_what_myst_nb_glue_writes(published, value, display):
    from myst_nb import glue as myst_glue

    myst_glue("key", value, display=display)
    prose.glue("key", value, display=display)
    assert len(published) == 2 and published[0] == published[1]


def test_record_glues_and_prints_in_one_fixed_format(published, capsys):
    prose.record(tokens=np.int64(98_304), share=np.float64(2 / 3), word=prose.compare(2, 1))
    assert capsys.readouterr().out == "tokens  98,304\nshare   0.666667\nword    more\n"
    names = [meta["scrapbook"]["name"] for _, meta in published]
    assert names == ["tokens", "share", "word"]
    assert published[1][0] == {"application/papermill.record/text/plain": "0.666666666667"}
    assert published[2][1]["comparison"] == {"first": 2, "second": 1, "more": "more", "less": "less", "same": None}


def test_floats_keep_twelve_significant_digits_so_the_last_bits_never_show():
    assert prose.plain(0.1 + 0.2) == 0.3
    assert prose.plain(np.float64(1 / 3)) == 0.333333333333
    assert type(prose.plain(np.int64(3))) is int and prose.plain(True) is True
    with pytest.raises(ValueError, match="not finite"):
        prose.plain(float("nan"))
    with pytest.raises(TypeError, match="can only glue"):
        prose.plain(object())


def test_words_follow_the_numbers():
    assert (prose.compare(768, 1011), prose.compare(1011, 768)) == ("less", "more")
    assert prose.compare(2, 2, same="as much as") == "as much as"
    with pytest.raises(ValueError, match="equal"):
        prose.compare(2, 2)
    assert [prose.plural(n, "conversation") for n in (1, 2, 1024)] == ["1 conversation", "2 conversations",
                                                                        "1,024 conversations"]
    assert prose.listing(["a", "b", "c"]) == "a, b and c" and prose.listing(["a"]) == "a"
