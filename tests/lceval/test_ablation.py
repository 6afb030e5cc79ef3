"""The feature-group ablation runner (paper Table 5) on toy features: variants, training, evaluation."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.meta_evaluation.lceval_ablation import VARIANTS, evaluate_model, run_ablation
from capeval.lceval.features import FEATURE_NAMES, GROUPS


def test_variants_are_the_papers():
    assert set(VARIANTS) == {"all", "only-lexical", "only-semantic", "only-syntactic", "without-lexical",
                             "without-semantic", "without-syntactic"}
    assert VARIANTS["all"] == list(FEATURE_NAMES)
    for group, names in GROUPS.items():
        assert VARIANTS[f"only-{group}"] == [n for n in FEATURE_NAMES if n in names]
        assert not set(VARIANTS[f"without-{group}"]) & set(names)


def _toy(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.random((n, 16)) * 0.3
    x[:, FEATURE_NAMES.index("spice")] += 0.6 * y  # a semantic feature carries the label
    return x, y


def test_run_ablation_trains_and_scores_every_variant(tmp_path):
    pytest.importorskip("torch")
    train, dev = _toy(400, 0), _toy(100, 1)
    rng = np.random.default_rng(2)
    human = rng.random(50)
    x = rng.random((50, 16)) * 0.3
    x[:, FEATURE_NAMES.index("spice")] += human  # judgments follow SPICE
    caption_bench = {"x": x, "human": human.tolist()}
    a, b = rng.random((40, 16)), rng.random((40, 16))
    pair_bench = {"a": a, "b": b, "preferred": [0, 1] * 20, "category": ["HC", "MM"] * 20}
    result = run_ablation(train, dev, {"caption": caption_bench, "pairs": pair_bench}, tmp_path,
                          variants=["all", "only-semantic", "without-semantic"], epochs=8, lr=1e-2,
                          progress=False)
    rows = result["variants"]
    assert list(rows) == ["all", "only-semantic", "without-semantic"] and "paper_table5" in result
    assert rows["only-semantic"]["caption"]["kendall_b"] > 0.5
    assert rows["without-semantic"]["caption"]["kendall_b"] < rows["only-semantic"]["caption"]["kendall_b"]
    assert set(rows["all"]["pairs"]) == {"HC", "MM", "average"}
    assert (tmp_path / "only-semantic" / "model.safetensors").is_file()
    with pytest.raises(ValueError, match="unknown ablation variant"):
        run_ablation(train, dev, {}, tmp_path, variants=["only-images"])


def test_evaluate_model_on_pairs_counts_ties_half():
    from capeval.lceval.model import LCEvalConfig, LCEvalModel

    model = LCEvalModel(LCEvalConfig(hidden=0, features=["p1"]), {"W": np.array([[0.0, 1.0]]), "b": np.zeros(2)})
    a = np.zeros((4, 16))
    b = np.zeros((4, 16))
    a[:2, 0] = 1.0  # a better on the first two pairs, tied on the last two
    out = evaluate_model(model, {"a": a, "b": b, "preferred": [0, 1, 0, 1], "category": ["HC"] * 4})
    assert out["HC"] == pytest.approx(100 * (1 + 0 + 0.5 + 0.5) / 4)
