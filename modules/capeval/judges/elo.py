"""Ranking systems from pairwise battles: online Elo as CapArena computes it (njucckevin/CapArena ``cal_ranking.py``,
``compute_elo`` and ``get_bootstrap_result``), with bootstrap 95 % intervals, and each system's win rate.

A battle is ``(system_1, system_2, winner)`` with ``winner`` one of the two names or ``"tie"``. Elo: every system
starts at :data:`INIT_RATING` (1000); battles are played in order, each moving both ratings by ``K * (s - e)`` with
``K`` = 4, ``e = 1 / (1 + 10 ** ((r_other - r_self) / 400))`` the expected score and ``s`` 1 for a win, 0.5 for a
tie, 0 for a loss. Bootstrap (the reference's ``battles.sample(frac=1.0, replace=True)`` 1000 times after
``np.random.seed(42)``): each round draws as many battles as there are, with replacement, from NumPy's legacy
``RandomState(seed)`` (the same draws as pandas' sampling under that seed), and plays them in the drawn order. The
ranking orders systems by the median of their bootstrap ratings (highest first, as the reference's
``calculate_elo_rankings`` returns them); the interval is the 2.5 % and 97.5 % quantiles of those ratings (linear
interpolation, as pandas' ``quantile``). A system absent from a round's draw has no rating in that round (the
reference's ``NaN``), left out of its median and quantiles.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: ``compute_elo``'s constants.
K_FACTOR = 4
SCALE = 400
BASE = 10
INIT_RATING = 1000
#: ``calculate_elo_rankings``'s bootstrap rounds and seed.
BOOTSTRAP_ROUNDS = 1000
SEED = 42
TIE = "tie"


def _check(battles: Sequence[tuple[str, str, str]]) -> None:
    for i, battle in enumerate(battles):
        if len(battle) != 3:
            raise ValueError(f"battles[{i}]: expected (system_1, system_2, winner), got {len(battle)} values.")
        first, second, winner = battle
        if winner not in (first, second, TIE):
            raise ValueError(f"battles[{i}]: winner {winner!r:.60} is neither {first!r:.60}, {second!r:.60} nor "
                             f"'{TIE}'.")


def compute_elo(battles: Iterable[tuple[str, str, str]], *, k: float = K_FACTOR, scale: float = SCALE,
                base: float = BASE, init: float = INIT_RATING) -> dict[str, float]:
    """Online Elo ratings after playing ``battles`` in order: ``{system: rating}`` (ratings around ``init``, in Elo
    points), systems in order of first appearance."""
    rating: dict[str, float] = {}
    for first, second, winner in battles:
        ra = rating.setdefault(first, init)
        rb = rating.setdefault(second, init)
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        sa = 1.0 if winner == first else 0.0 if winner == second else 0.5
        rating[first] += k * (sa - ea)
        rating[second] += k * (1 - sa - eb)
    return rating


def bootstrap_elo(battles: Sequence[tuple[str, str, str]], *, rounds: int = BOOTSTRAP_ROUNDS,
                  seed: int = SEED):
    """``(systems, ratings)``: the systems in order of first appearance and a ``(rounds, len(systems))`` float array
    of each round's Elo ratings (``NaN`` where a system is absent from the round's draw)."""
    import numpy as np

    battles = list(battles)
    _check(battles)
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}.")
    systems = list(compute_elo(battles))
    column = {s: j for j, s in enumerate(systems)}
    out = np.full((rounds, len(systems)), np.nan)
    if not battles:
        return systems, out
    state = np.random.RandomState(seed)
    n = len(battles)
    for r in range(rounds):
        drawn = state.choice(n, size=n, replace=True)
        for system, value in compute_elo(battles[i] for i in drawn).items():
            out[r, column[system]] = value
    return systems, out


@dataclass(frozen=True)
class SystemRank:
    """One system's standing: ``elo`` the median bootstrap Elo rating and ``ci_low`` / ``ci_high`` its 95 %
    interval (Elo points, around 1000), ``elo_online`` the rating after the battles in their given order,
    ``wins`` / ``losses`` / ``ties`` counts of its battles and ``win_rate`` (wins + ties / 2) / battles in [0, 1]."""

    rank: int
    system: str
    elo: float
    ci_low: float
    ci_high: float
    elo_online: float
    battles: int
    wins: int
    losses: int
    ties: int
    win_rate: float

    def to_json(self) -> dict:
        return dict(self.__dict__)


def rank_systems(battles: Sequence[tuple[str, str, str]], *, rounds: int = BOOTSTRAP_ROUNDS,
                 seed: int = SEED) -> list[SystemRank]:
    """The systems of ``battles`` ranked by median bootstrap Elo (highest first; see the module docstring), each with
    its 95 % interval and win rate. Deterministic for a given ``seed``."""
    import numpy as np

    battles = list(battles)
    systems, ratings = bootstrap_elo(battles, rounds=rounds, seed=seed)
    online = compute_elo(battles)
    counts = {s: [0, 0, 0] for s in systems}
    for first, second, winner in battles:
        for me, other in ((first, second), (second, first)):
            counts[me][0 if winner == me else 1 if winner == other else 2] += 1
    medians = [float(np.nanmedian(ratings[:, j])) for j in range(len(systems))]
    order = sorted(range(len(systems)), key=lambda j: -medians[j])
    out = []
    for rank, j in enumerate(order, 1):
        column = ratings[:, j][~np.isnan(ratings[:, j])]
        low, high = (float(q) for q in np.quantile(column, [0.025, 0.975]))
        wins, losses, ties = counts[systems[j]]
        total = wins + losses + ties
        out.append(SystemRank(rank, systems[j], medians[j], low, high, online[systems[j]], total, wins, losses, ties,
                              (wins + ties / 2) / total if total else float("nan")))
    return out
