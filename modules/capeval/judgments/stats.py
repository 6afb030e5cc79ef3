"""Statistics for metric-vs-human agreement.

* Correlations (values in [-1, 1]): :func:`kendall_tau` (tau-b or tau-c, scipy's
  ``kendalltau(variant=...)``, which is what CLIPScore/PAC-S call for Flickr8k-Expert tau-c),
  :func:`pearson`, :func:`spearman`, and :func:`correlation` dispatching on a statistic name.
* :func:`pairwise_accuracy` (in [0, 1]) with explicit policies for metric ties and human ties.
* :func:`bootstrap_ci`: seeded percentile intervals, resampling items (a group of rows, e.g. the 3
  expert rows of one Flickr8k pair, is resampled together), optionally within strata (:class:`Resampler`).
* :func:`paired_bootstrap_difference`: paired bootstrap of the difference of one statistic between two
  metrics on the same items (interval, two-sided p, verdict).
* :func:`system_means` and :func:`system_level_correlation` for system-level agreement.

Undefined statistics (constant input, fewer than 2 rows, NaN/inf input) raise ``ValueError``
instead of returning NaN.

Kendall tau-c as scipy computes it: ``tau_c = 2 (P - Q) / (n^2 (m - 1) / m)`` with P/Q the
concordant/discordant pairs, n the number of rows and m = min(#distinct x, #distinct y). tau-b is
``(P - Q) / sqrt((P + Q + T_x) (P + Q + T_y))`` with T_x/T_y the pairs tied only in x/only in y.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.stats

METRIC_TIE_POLICIES = ("half", "wrong", "random")
HUMAN_TIE_POLICIES = ("exclude", "half", "random", "error")


def _vectors(x: Sequence[float], y: Sequence[float], what: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"{what}: inputs must be 1-D, got shapes {a.shape} and {b.shape}.")
    if len(a) != len(b):
        raise ValueError(f"{what}: length mismatch, {len(a)} vs {len(b)} values.")
    if len(a) < 2:
        raise ValueError(f"{what}: needs at least 2 values, got {len(a)}.")
    for name, arr in (("x", a), ("y", b)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise ValueError(f"{what}: {name}[{bad[0]}] is {arr[bad[0]]}; all values must be finite.")
        if np.all(arr == arr[0]):
            raise ValueError(f"{what}: {name} is constant ({arr[0]}); the correlation is undefined.")
    return a, b


def _finite(value: float, what: str) -> float:
    if not np.isfinite(value):
        raise ValueError(f"{what} is undefined for this input (scipy returned {value}).")
    return float(value)


def kendall_tau(x: Sequence[float], y: Sequence[float], variant: str = "b") -> float:
    """Kendall's tau-b (``variant="b"``) or tau-c (``"c"``) in [-1, 1] (scipy ``kendalltau``)."""
    if variant not in ("b", "c"):
        raise ValueError(f"variant must be 'b' or 'c', got {variant!r}.")
    a, b = _vectors(x, y, f"kendall tau-{variant}")
    return _finite(scipy.stats.kendalltau(a, b, variant=variant).statistic, f"kendall tau-{variant}")


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r in [-1, 1]."""
    a, b = _vectors(x, y, "pearson")
    return _finite(scipy.stats.pearsonr(a, b).statistic, "pearson")


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho in [-1, 1] (average ranks for ties)."""
    a, b = _vectors(x, y, "spearman")
    return _finite(scipy.stats.spearmanr(a, b).statistic, "spearman")


def correlation(human: Sequence[float], metric: Sequence[float], statistic: str) -> float:
    """``kendall_b``, ``kendall_c``, ``pearson`` or ``spearman`` between two aligned vectors."""
    if statistic == "kendall_b":
        return kendall_tau(human, metric, "b")
    if statistic == "kendall_c":
        return kendall_tau(human, metric, "c")
    if statistic == "pearson":
        return pearson(human, metric)
    if statistic == "spearman":
        return spearman(human, metric)
    raise ValueError(f"unknown correlation {statistic!r}; choose kendall_b, kendall_c, pearson or spearman.")


#: The correlation a partial correlation is built from, per benchmark statistic: Kendall's partial τ is defined
#: from τ-b (τ-c is not a correlation of the two rankings' pairs alone), the others from themselves.
PARTIAL_OF = {"kendall_b": "kendall_b", "kendall_c": "kendall_b", "pearson": "pearson", "spearman": "spearman"}


def partial_correlation(human: Sequence[float], metric: Sequence[float], control: Sequence[float],
                        statistic: str) -> float | None:
    """The correlation of ``human`` and ``metric`` with ``control`` (e.g. caption length) held fixed, in [-1, 1]:
    ``(r_hm − r_hc r_mc) / sqrt((1 − r_hc²)(1 − r_mc²))`` with ``r`` the correlation :data:`PARTIAL_OF` names for
    ``statistic`` (Kendall's partial τ-b for ``kendall_b`` / ``kendall_c``, Fisher's partial Pearson, partial
    Spearman). ``None`` when either variable is a function of ``control`` (``|r| = 1``: nothing is left to
    correlate)."""
    base = PARTIAL_OF.get(statistic)
    if base is None:
        raise ValueError(f"unknown correlation {statistic!r}; choose one of {', '.join(PARTIAL_OF)}.")
    r_hm, r_hc, r_mc = (correlation(x, y, base) for x, y in ((human, metric), (human, control), (metric, control)))
    denominator = (1.0 - r_hc ** 2) * (1.0 - r_mc ** 2)
    if denominator <= 1e-12:
        return None
    return float(max(-1.0, min(1.0, (r_hm - r_hc * r_mc) / np.sqrt(denominator))))


def length_matched(length_a: Sequence[float], length_b: Sequence[float], tolerance: float = 1.0) -> np.ndarray:
    """A mask of the pairs whose two captions' lengths differ by at most ``tolerance`` (words): the pairs on which
    a metric cannot be right by preferring the longer caption."""
    a, b = np.asarray(length_a, dtype=float), np.asarray(length_b, dtype=float)
    return np.abs(a - b) <= tolerance


# -- pairwise accuracy --------------------------------------------------------------------------
def pairwise_credit(
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    preferred: Sequence[int | None],
    *,
    metric_ties: str = "half",
    human_ties: str = "exclude",
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-pair credit in {0, 0.5, 1} and a mask of the pairs that count.

    ``preferred[i]`` is 0 (humans preferred a), 1 (b) or ``None`` (a human tie). The metric prefers
    the candidate with the higher score; equal scores are a metric tie.

    metric_ties: ``"half"`` (0.5 credit), ``"wrong"`` (0), ``"random"`` (a seeded coin decides).
    human_ties: ``"exclude"`` (the pair does not count), ``"half"`` (0.5 credit whatever the
    metric says), ``"random"`` (a seeded coin picks the human label), ``"error"`` (``ValueError``).
    The same seed always gives the same coins (drawn in pair order, human coins first).
    """
    if metric_ties not in METRIC_TIE_POLICIES:
        raise ValueError(f"metric_ties must be one of {METRIC_TIE_POLICIES}, got {metric_ties!r}.")
    if human_ties not in HUMAN_TIE_POLICIES:
        raise ValueError(f"human_ties must be one of {HUMAN_TIE_POLICIES}, got {human_ties!r}.")
    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    n = len(preferred)
    if a.shape != (n,) or b.shape != (n,):
        raise ValueError(f"pairwise accuracy: {n} labels but scores of shapes {a.shape} and {b.shape}.")
    for name, arr in (("scores_a", a), ("scores_b", b)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise ValueError(f"pairwise accuracy: {name}[{bad[0]}] is {arr[bad[0]]}; scores must be finite.")
    labels = np.empty(n, dtype=float)
    for i, p in enumerate(preferred):
        if p is None:
            labels[i] = np.nan
        elif p in (0, 1):
            labels[i] = float(p)
        else:
            raise ValueError(f"pairwise accuracy: preferred[{i}] is {p!r}; expected 0, 1 or None (tie).")
    rng = np.random.default_rng(seed)
    human_tie = np.isnan(labels)
    if human_tie.any() and human_ties == "error":
        raise ValueError(f"pairwise accuracy: pair {int(np.flatnonzero(human_tie)[0])} is a human tie "
                         "(choose human_ties='exclude', 'half' or 'random').")
    if human_ties == "random":
        labels[human_tie] = rng.integers(0, 2, size=int(human_tie.sum()))
    metric_choice = np.where(b > a, 1.0, np.where(a > b, 0.0, np.nan))
    metric_tie = np.isnan(metric_choice)
    credit = np.where(metric_choice == labels, 1.0, 0.0)
    if metric_ties == "half":
        credit[metric_tie] = 0.5
    elif metric_ties == "random":
        coins = rng.integers(0, 2, size=int(metric_tie.sum())).astype(float)
        credit[metric_tie] = (coins == labels[metric_tie]).astype(float)
    else:
        credit[metric_tie] = 0.0
    mask = np.ones(n, dtype=bool)
    if human_ties == "exclude":
        mask &= ~human_tie
    elif human_ties == "half":
        credit[human_tie] = 0.5
    return credit, mask


def pairwise_accuracy(
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    preferred: Sequence[int | None],
    *,
    metric_ties: str = "half",
    human_ties: str = "exclude",
    seed: int = 0,
) -> float:
    """Fraction (in [0, 1]) of pairs where the metric prefers the human-preferred candidate.

    See :func:`pairwise_credit` for the tie policies.
    """
    credit, mask = pairwise_credit(
        scores_a, scores_b, preferred, metric_ties=metric_ties, human_ties=human_ties, seed=seed
    )
    if not mask.any():
        raise ValueError("pairwise accuracy: no pair left to count (all are human ties and human_ties='exclude').")
    return float(credit[mask].mean())


# -- bootstrap -----------------------------------------------------------------------------------
class Resampler:
    """Seeded bootstrap resamples of row indices.

    An *item* is one row (``n_rows`` rows, no ``groups``) or, with ``groups`` (the item id of every row), all
    the rows sharing an id; a resample draws items with replacement and returns the rows of the drawn items
    (all rows of an item enter together, in the order they appear in the data). With ``strata`` (a label per
    row, constant within an item) each stratum keeps its item count: ``n_s`` items are drawn with replacement
    from stratum ``s``'s items, strata in sorted label order. Without strata a resample draws
    ``rng.integers(0, n_items, n_items)``, so :func:`bootstrap_ci` keeps the intervals it always gave.
    """

    def __init__(self, n_rows: int | None = None, *, groups: Sequence | None = None, strata: Sequence | None = None):
        if groups is not None:
            g = np.asarray(groups)
            if g.ndim != 1:
                raise ValueError(f"bootstrap: groups must be 1-D, got shape {g.shape}.")
            n_rows = len(g) if n_rows is None else int(n_rows)
            if len(g) != n_rows:
                raise ValueError(f"bootstrap: {len(g)} group ids for {n_rows} rows.")
            uniq, inverse = np.unique(g, return_inverse=True)
            self._order = np.argsort(inverse, kind="stable")
            self._starts = np.searchsorted(inverse[self._order], np.arange(len(uniq)))
            self._sizes = np.bincount(inverse, minlength=len(uniq))
            self.n_items = len(uniq)
            first_row = self._order[self._starts]
        elif n_rows is not None:
            self._order = None
            self.n_items = int(n_rows)
            first_row = np.arange(self.n_items)
        elif strata is not None:
            n_rows = len(strata)
            self._order = None
            self.n_items = int(n_rows)
            first_row = np.arange(self.n_items)
        else:
            raise ValueError("bootstrap: give the number of rows (n_items) or groups.")
        self.n_rows = int(n_rows)
        if self.n_items < 2:
            raise ValueError(f"bootstrap: needs at least 2 items, got {self.n_items}.")
        self._strata: list[np.ndarray] | None = None
        if strata is not None:
            labels = np.asarray(strata)
            if labels.shape != (self.n_rows,):
                raise ValueError(f"bootstrap: {labels.shape} strata labels for {self.n_rows} rows.")
            item_label = labels[first_row]
            if self._order is not None:
                per_row = np.repeat(item_label, self._sizes)
                bad = np.flatnonzero(labels[self._order] != per_row)
                if bad.size:
                    row = int(self._order[bad[0]])
                    raise ValueError(f"bootstrap: row {row} has stratum {labels[row]!r} but other rows of its item "
                                     f"have {per_row[bad[0]]!r}; an item must lie in one stratum.")
            _, codes = np.unique(item_label, return_inverse=True)
            self._strata = [np.flatnonzero(codes == c) for c in range(int(codes.max()) + 1)]

    def rows_of(self, items: np.ndarray) -> np.ndarray:
        """The row indices of ``items`` (item numbers in [0, n_items)), item after item."""
        if self._order is None:
            return items
        sizes = self._sizes[items]
        ends = np.cumsum(sizes)
        offsets = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - sizes, sizes)
        return self._order[np.repeat(self._starts[items], sizes) + offsets]

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One resample: row indices (with repeats) of items drawn with replacement (within strata)."""
        if self._strata is None:
            items = rng.integers(0, self.n_items, size=self.n_items)
        else:
            items = np.concatenate([members[rng.integers(0, len(members), size=len(members))]
                                    for members in self._strata])
        return self.rows_of(items)


def _check_bootstrap(n_resamples: int, confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples}.")


def bootstrap_ci(
    statistic: Callable[[np.ndarray], float],
    *,
    n_items: int | None = None,
    groups: Sequence[int] | None = None,
    strata: Sequence | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Seeded percentile bootstrap interval of ``statistic(row_indices)``.

    Items are resampled with replacement. Without ``groups`` an item is one row
    (``n_items`` rows); with ``groups`` (the item id of every row) all rows of a drawn item enter
    together, so repeated judgments of one item stay together. With ``strata`` (a label per row) every
    stratum keeps its number of items (e.g. the pairs of each PASCAL-50S category); see :class:`Resampler`.
    Resamples on which the statistic is
    undefined (``ValueError``, e.g. a constant resample) are skipped and counted; more than half
    skipped raises. Returns ``{"low", "high", "confidence", "n_resamples", "skipped", "seed"}``
    (``low``/``high`` in the statistic's units; ``confidence`` in (0, 1)).
    Koehn (2004) / THumB use 90% intervals: pass ``confidence=0.9``.
    """
    _check_bootstrap(n_resamples, confidence)
    if groups is None and n_items is None and strata is None:
        raise ValueError("bootstrap_ci: give n_items or groups.")
    sampler = Resampler(n_items if groups is None else None, groups=groups, strata=strata)
    rng = np.random.default_rng(seed)
    values, skipped = [], 0
    for _ in range(n_resamples):
        idx = sampler.draw(rng)
        try:
            values.append(statistic(idx))
        except ValueError:
            skipped += 1
    if skipped * 2 > n_resamples:
        raise ValueError(f"bootstrap_ci: the statistic was undefined on {skipped} of {n_resamples} resamples.")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return {"low": float(low), "high": float(high), "confidence": confidence,
            "n_resamples": n_resamples, "skipped": skipped, "seed": seed}


def paired_bootstrap_difference(
    statistic: Callable[[Any, np.ndarray], float],
    a_values: Any,
    b_values: Any,
    *,
    groups: Sequence | None = None,
    strata: Sequence | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired bootstrap of ``statistic(a_values, rows) - statistic(b_values, rows)``: is metric A better than B?

    ``a_values`` and ``b_values`` are the two metrics' values on the same rows (anything with ``len`` equal to
    the number of rows, e.g. per-row metric scores, or per-pair credit); ``statistic(values, rows)`` computes the
    benchmark's statistic on the rows ``rows`` (an index array, with repeats), e.g.
    ``lambda v, rows: kendall_tau(human[rows], v[rows], "c")``. Every resample draws the *same* rows for both
    metrics (items, or ``groups`` of rows, with replacement, within ``strata``; see :class:`Resampler`), so what
    the two metrics share (which items are easy) cancels out of the difference.

    Resamples on which either statistic is undefined (``ValueError``) are skipped and counted; more than half
    skipped raises. Returns, with differences in the statistic's units (e.g. Kendall τ in [-2, 2], accuracy in
    the statistic's own units):

    * ``difference``: ``statistic(a) - statistic(b)`` on all rows; ``value_a``, ``value_b``: the two statistics;
    * ``ci``: ``[low, high]``, the percentile interval of the resampled differences at ``confidence`` (in (0, 1));
    * ``p_value``: two-sided bootstrap p in [0, 1], ``min(1, 2 min(share of differences <= 0, share >= 0))``
      (resolution 1/``n_resamples``: 0 means no resample had the difference at or across zero);
    * ``a_beats_b``: ``low > 0``; ``b_beats_a``: ``high < 0``;
    * ``confidence``, ``n_resamples``, ``skipped``, ``seed``. The same seed gives the same result.
    """
    _check_bootstrap(n_resamples, confidence)
    n_rows = len(a_values)
    if len(b_values) != n_rows:
        raise ValueError(f"paired bootstrap: {n_rows} values for A but {len(b_values)} for B; "
                         "both metrics must score the same rows.")
    sampler = Resampler(n_rows, groups=groups, strata=strata)
    every = np.arange(n_rows)
    value_a, value_b = float(statistic(a_values, every)), float(statistic(b_values, every))
    rng = np.random.default_rng(seed)
    diffs, skipped = [], 0
    for _ in range(n_resamples):
        idx = sampler.draw(rng)
        try:
            diffs.append(float(statistic(a_values, idx)) - float(statistic(b_values, idx)))
        except ValueError:
            skipped += 1
    if skipped * 2 > n_resamples:
        raise ValueError(f"paired bootstrap: the statistic was undefined on {skipped} of {n_resamples} resamples.")
    d = np.asarray(diffs)
    alpha = (1 - confidence) / 2
    low, high = (float(v) for v in np.quantile(d, [alpha, 1 - alpha]))
    p_value = float(min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0))))
    return {"difference": value_a - value_b, "value_a": value_a, "value_b": value_b, "ci": [low, high],
            "confidence": confidence, "n_resamples": n_resamples, "skipped": skipped, "seed": seed,
            "p_value": p_value, "a_beats_b": bool(low > 0), "b_beats_a": bool(high < 0)}


# -- system level ----------------------------------------------------------------------------------
def system_means(systems: Sequence[str], scores: Sequence[float]) -> dict[str, float]:
    """Mean score per system, systems in order of first appearance."""
    values = np.asarray(scores, dtype=float)
    if len(systems) != len(values):
        raise ValueError(f"system_means: {len(systems)} system labels but {len(values)} scores.")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"system_means: scores[{bad[0]}] is {values[bad[0]]}; scores must be finite.")
    sums: dict[str, list[float]] = {}
    for s, v in zip(systems, values):
        sums.setdefault(s, []).append(v)
    return {s: float(np.mean(v)) for s, v in sums.items()}


def system_level_correlation(
    metric_by_system: Mapping[str, float],
    human_by_system: Mapping[str, float],
    statistic: str = "pearson",
) -> dict[str, Any]:
    """Correlation between per-system metric and human scores over the systems both name.

    Returns ``{"value", "statistic", "systems"}``; at least 3 shared systems are required.
    """
    shared = [s for s in metric_by_system if s in human_by_system]
    missing = sorted(set(metric_by_system) ^ set(human_by_system))
    if len(shared) < 3:
        raise ValueError(f"system-level correlation needs at least 3 systems in both, got {shared} "
                         f"(only in one: {missing}).")
    value = correlation([human_by_system[s] for s in shared], [metric_by_system[s] for s in shared], statistic)
    return {"value": value, "statistic": statistic, "systems": shared}


# -- benchmark helper ------------------------------------------------------------------------------
def evaluate_pairs(
    records: Sequence,
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    *,
    metric_ties: str = "half",
    human_ties: str = "exclude",
    bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Accuracy per category and their unweighted mean (``value``) for :class:`PairRecord` lists."""
    credit, mask = pairwise_credit(
        scores_a, scores_b, [r.preferred for r in records],
        metric_ties=metric_ties, human_ties=human_ties, seed=seed,
    )
    canonical = ("HC", "HI", "HM", "MM")
    categories = sorted(dict.fromkeys(r.category or "all" for r in records),
                        key=lambda c: (canonical.index(c) if c in canonical else len(canonical), c))
    cat_of = np.array([r.category or "all" for r in records])
    out: dict[str, Any] = {"statistic": "accuracy", "metric_ties": metric_ties, "human_ties": human_ties,
                           "categories": {}, "pairs": int(mask.sum())}
    for cat in categories:
        rows = np.flatnonzero((cat_of == cat) & mask)
        if rows.size == 0:
            raise ValueError(f"category {cat}: no pair left to count under human_ties={human_ties!r}.")
        entry: dict[str, Any] = {"value": float(credit[rows].mean()), "pairs": int(rows.size)}
        if bootstrap:
            entry["ci"] = bootstrap_ci(lambda idx, rows=rows: float(credit[rows[idx]].mean()),
                                       n_items=rows.size, n_resamples=bootstrap, confidence=confidence, seed=seed)
        out["categories"][cat] = entry
    out["value"] = float(np.mean([e["value"] for e in out["categories"].values()]))
    return out
