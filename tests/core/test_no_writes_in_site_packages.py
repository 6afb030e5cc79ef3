"""capeval never writes inside installed packages (pycocoevalcap's own tokenizer does; capeval must not)."""
from __future__ import annotations

from pathlib import Path

import pytest

import capeval
from capeval.paths import pycocoevalcap_dir

# a handful of captions on purpose: CIDEr-D's SmallCorpusWarning is expected, not what these tests check
pytestmark = [pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning"),
              pytest.mark.filterwarnings("ignore::capeval.NonEnglishWarning")]  # one caption is in another script


def _snapshot(*roots: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for root in roots for p in root.rglob("*") if p.is_file()
            and "__pycache__" not in p.parts}


def test_scoring_every_metric_leaves_installed_packages_untouched(tmp_path, monkeypatch, java):
    pytest.importorskip("spacy")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    roots = [pycocoevalcap_dir(), Path(capeval.__file__).parent]
    before = _snapshot(*roots)
    preds = ["A dog runs on the grass.", "two cats\non a sofa ||| x", "Émile's café (à Paris) 😀"]
    refs = [["A dog running on a lawn."], ["Two cats sleep on a couch.", "Cats on a sofa."], ["A café in Paris."]]
    for tokenizer in ("ptb", "ptb-java"):
        capeval.score(preds, refs, metrics=["bleu", "meteor", "rouge_l", "cider_d", "spice", "spice_u"],
                      tokenizer=tokenizer)
    capeval.score(preds, refs, metrics=["cider_d"], cider_df="coco-val2014")
    assert _snapshot(*roots) == before
    assert any((tmp_path / "cache").rglob("*")), "caches must go to CAPEVAL_CACHE_DIR"
