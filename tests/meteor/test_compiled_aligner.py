"""METEOR's compiled aligner (capeval.meteor.compiled): built by the install, chosen only while it is the compiled copy
of today's align.py, and identical to the Python aligner statistic for statistic."""
from __future__ import annotations

import random
import shutil

import pytest

import capeval.meteor.align as python_align
from capeval.meteor import compiled
from capeval.meteor.scorer import PythonMeteorScorer, prepare_text

from support.meteor_cases import HOSTILE, random_caption as _random_caption


@pytest.fixture(scope="module")
def compiled_align():
    module = compiled.compiled_aligner()
    if module is None:
        if shutil.which("cc") or shutil.which("gcc"):
            pytest.fail("capeval.meteor._align_compiled is missing or stale although a C compiler is here: "
                        "reinstall (pip install -e .) to build it")
        pytest.skip("no C compiler: the install could not build the compiled aligner")
    return module


def test_the_scorer_runs_the_compiled_aligner(compiled_align):
    import capeval.meteor.scorer as scorer_module

    assert compiled_align.__name__ == compiled.COMPILED_NAME
    assert compiled_align.__file__.endswith((".so", ".pyd"))
    assert scorer_module.best_stats is compiled_align.best_stats
    assert compiled_align.SOURCE_DIGEST == compiled.source_digest()


def test_a_stale_compiled_copy_is_not_used(compiled_align, monkeypatch):
    """align.py edited after the build: the Python aligner, not the copy compiled from the old source."""
    monkeypatch.setattr(compiled, "source_digest", lambda: "0" * 64)
    assert compiled.compiled_aligner() is None
    assert compiled.aligner() is python_align


def test_without_the_compiled_copy_the_python_aligner(monkeypatch):
    monkeypatch.setattr(compiled, "COMPILED_NAME", "capeval.meteor._no_such_module")
    assert compiled.aligner() is python_align


def test_compiled_and_python_aligners_give_the_same_statistics(compiled_align):
    """Every statistic of the best reference and of each reference, for seeded random captions (every stage, function
    words, odd characters, empty lines), the hostile cases and long lines."""
    scorer = PythonMeteorScorer()
    scorer.load()
    rng = random.Random(33)
    cases = [(_random_caption(rng), [_random_caption(rng) for _ in range(rng.randint(1, 5))]) for _ in range(400)]
    cases += [(h, list(r)) for h, r in HOSTILE]
    long_words = " ".join(rng.choice(["a", "dog", "the", "man", "on", "grass", "riding", "bike"]) for _ in range(120))
    cases.append((long_words, [long_words[::-1], long_words[: len(long_words) // 2], long_words]))
    for hypothesis, references in cases:
        scorer._add_sentences([hypothesis, *references])
        s1 = scorer._sentences[prepare_text(hypothesis)]
        s2s = [scorer._sentences[prepare_text(r)] for r in references]
        groups = scorer._groups
        assert compiled_align.best_stats(s1, s2s, groups) == python_align.best_stats(s1, s2s, groups)
        for s2 in s2s:
            assert compiled_align.align_stats(s1, s2, groups) == python_align.align_stats(s1, s2, groups)
