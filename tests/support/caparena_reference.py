"""CapArena's ``cal_ranking.py`` (njucckevin/CapArena), transcribed for the tests of capeval's Elo ranking
(``tests/judges/test_arena.py``) and of the CapArena benchmark's model-level agreement
(``tests/benchmarks/test_caparena.py``): ``compute_elo`` and its bootstrap, as the reference writes them."""
from __future__ import annotations


def reference_compute_elo(battles, K=4, SCALE=400, BASE=10, INIT_RATING=1000):
    from collections import defaultdict

    rating = defaultdict(lambda: INIT_RATING)
    for rd, source1, source2, winner in battles[['source1', 'source2', "winner_gpt"]].itertuples():
        ra = rating[source1]
        rb = rating[source2]
        ea = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        eb = 1 / (1 + BASE ** ((ra - rb) / SCALE))
        if winner == source1:
            sa = 1
        elif winner == source2:
            sa = 0
        elif winner == "tie" or winner == "tie (bothbad)" or winner == "equal":
            sa = 0.5
        else:
            raise Exception(f"unexpected vote {winner}")
        rating[source1] += K * (sa - ea)
        rating[source2] += K * (1 - sa - eb)
    return rating


def reference_bootstrap(battles, num_round):
    import pandas as pd

    rows = []
    for _ in range(num_round):
        rows.append(reference_compute_elo(battles.sample(frac=1.0, replace=True)))
    df = pd.DataFrame(rows)
    return df[df.median().sort_values(ascending=False).index]
