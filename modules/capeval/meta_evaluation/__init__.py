"""Meta-evaluation: caption metrics measured against the human judgments of :mod:`capeval.judgments`.

Modules, in data-flow order: ``scorers`` scores a benchmark's items with any capeval metric or ``evaluate`` module,
cached by ``score_cache`` (``blend``: weighted mixes of metrics); ``harness`` runs ``capeval bench`` (agreement
statistics with bootstrap intervals and paired comparisons; ``length_control``: the caption-length baseline and each
metric's agreement with length held fixed; ``contamination``: which cells a metric's training data overlaps);
``report`` prints its tables beside the published numbers and draws plots; ``leaderboard/`` gathers ``bench --json``
files into one table and figure; ``verify/`` re-measures every published number (``capeval verify``);
``robustness/`` runs ``capeval robustness`` (Cui et al. 2018's transformed captions, no judgments); ``selection``
and ``lceval_ablation`` hold the rules and runs that picked capeval's learned defaults.
"""
