"""benchmarks/expert_ties.py: the share of human-ordered row pairs a metric ties, and the τ-b / τ-c gap it
explains."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module():
    pytest.importorskip("scipy")
    spec = importlib.util.spec_from_file_location("expert_ties", ROOT / "benchmarks" / "expert_ties.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tied_share_counts_metric_ties_among_pairs_humans_order():
    tied_share = _module().tied_share
    human = np.array([1, 1, 2, 3])
    # pairs humans order: (0,2) (0,3) (1,2) (1,3) (2,3) = 5; the metric ties (0,2) and (1,2): 0 == 0
    assert tied_share(human, np.array([0.0, 0.0, 0.0, 0.5])) == pytest.approx(2 / 5)
    assert tied_share(human, np.array([0.1, 0.2, 0.3, 0.4])) == 0.0
    assert np.isnan(tied_share(np.array([2, 2]), np.array([0.0, 1.0])))  # no pair that humans order


def test_ties_raise_tau_b_above_tau_c_for_a_coarse_metric():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    human = rng.integers(1, 5, size=2000).astype(float)
    fine = human + rng.normal(0, 1.2, size=human.size)
    coarse = np.where(fine < 2.5, 0.0, fine)  # a metric that gives every weak caption exactly 0, like SPICE
    share = _module().tied_share(human, coarse)
    assert share > 0.1 and _module().tied_share(human, fine) == 0.0
    gap_coarse = kendalltau(human, coarse, variant="b").statistic - kendalltau(human, coarse, variant="c").statistic
    gap_fine = kendalltau(human, fine, variant="b").statistic - kendalltau(human, fine, variant="c").statistic
    assert gap_coarse > gap_fine + 0.02
