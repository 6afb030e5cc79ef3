"""capeval's CLIP tokenizer gives OpenAI's ``clip.tokenize(prefix + text, truncate=True)`` ids, token for token: on every
Flickr8k caption, on hand-picked odd strings (special-token spellings, HTML, mojibake, CJK, emoji, control characters)
and on random Unicode text; through the Rust batch path and through the Python one."""
from __future__ import annotations

import pytest

pytest.importorskip("open_clip")
torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from capeval.vision_language import tokenizer as T  # noqa: E402
from support import clip_reference as ref  # noqa: E402

ODD = ["", "   ", "<|endoftext|>", "a <|startoftext|> b", "!<|endoftext|>", "<end_of_text> x", "&amp;lt;b&amp;gt;",
       "naïve café", "Ã©tÃ© mojibake", "東京の猫が寝ている", "🙂🙂 dog", "tab\tnew\nline\r\x00ctrl", "DON'T STOP",
       "it's we're they've I'm you'll he'd", "1234567890", "x" * 500, "a " * 100, "ﬁne ligature", "Ｆｕｌｌ ｗｉｄｔｈ",
       "don\u2019t \u201cquoted\u201d", "e\u0301 combining", "\u200b zero width", "ℌ𝔢𝔩𝔩𝔬", "مرحبا", "Привет мир"]


def _expected(texts, prefix="A photo depicts "):
    clip = ref.import_openai_clip()
    return clip.tokenize([prefix + t for t in texts], truncate=True)


def _got(texts, prefix="A photo depicts "):
    encoded = T.encode_texts(texts, prefix)
    out = torch.zeros(len(texts), 77, dtype=torch.long)
    for i, ids in enumerate(encoded.ids):
        out[i, :len(ids)] = torch.tensor(ids)
    return out


def _clear():
    T.clear_caches()


def test_odd_strings_both_paths(monkeypatch):
    _clear()
    assert (_got(ODD) == _expected(ODD)).all()
    _clear()
    monkeypatch.setattr(T, "_fast_bpe", lambda: None)  # the Python path
    assert (_got(ODD) == _expected(ODD)).all()
    _clear()


def test_every_flickr8k_caption():
    from support import require_data

    lines = require_data("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    captions = [line.split("\t", 1)[1] for line in lines if "\t" in line]
    _clear()
    for start in range(0, len(captions), 5000):
        chunk = captions[start:start + 5000]
        bad = (_got(chunk) != _expected(chunk)).any(dim=1).nonzero().flatten().tolist()
        assert not bad, [chunk[i] for i in bad[:5]]
    _clear()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=60), min_size=1, max_size=8))
def test_random_unicode(texts):
    _clear()
    assert (_got(texts, "") == _expected(texts, "")).all()


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=80))
def test_the_ascii_shortcut_cleans_as_ftfy_and_html_do(text):
    """The shortcut of :func:`capeval.vision_language.tokenizer.clean` equals the reference cleaning on any ASCII text."""
    assert T.clean(text) == T._bpe().clean_fn(text)
    assert T.clean(text + " &amp;amp; x") == T._bpe().clean_fn(text + " &amp;amp; x")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="\t\n\r !\"#$%'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcdxyz{|}~", max_size=80))
def test_the_ascii_shortcut_on_texts_it_takes(text):
    assert T._PLAIN.fullmatch(text)
    assert T.clean(text) == T._bpe().clean_fn(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=6))
def test_ids_assembled_from_pieces_other_texts_taught(texts):
    """A text's ids put together from the per-process piece table, filled by other texts (never emptied here), equal
    the reference's."""
    T.encode_texts([f"{t} {t[::-1]} {t.upper()}" for t in texts], "")
    assert (_got(texts, "") == _expected(texts, "")).all()


def test_the_text_table_stays_bounded_and_a_call_mixing_known_and_new_texts_gets_all(monkeypatch):
    """Texts already known in a call whose new texts overflow the table (a long score-dataset run) keep their ids."""
    _clear()
    monkeypatch.setattr(T, "ENCODED_CACHE_SIZE", 10)
    texts = [f"caption {i} of a dog" for i in range(30)]
    for chunk in (texts[:8], texts[:8] + texts[8:20], texts[5:30]):
        assert (_got(chunk) == _expected(chunk)).all()
        assert len(T._ENCODED) <= 10
    _clear()


def test_the_piece_table_stays_bounded(monkeypatch):
    _clear()
    monkeypatch.setattr(T, "PIECE_CACHE_SIZE", 10)
    texts = [f"word{i} other{i} thing{i}" for i in range(30)]
    for chunk in (texts[:10], texts[10:], texts[5:25]):
        assert (_got(chunk) == _expected(chunk)).all()
        assert len(T._PIECE_IDS) <= 10
    _clear()
