"""CapArena (Cheng et al. 2025, njucckevin/CapArena): 6,523 human pairwise battles between detailed captions of
DOCCI images by 14 vision-language models and humans, and its agreement statistics.

Files under ``<data dir>/caparena/`` (the release's ``data/eval/``; not part of capeval's data, download it from
the link in CapArena's readme):

* ``caparena_annots_eval.json``: a JSON list of battles ``{"img": file name, "caption1", "caption2", "source1",
  "source2": the systems ("human" for DOCCI's human caption), "winner": the winning system's name (anything else:
  a tie), "cluster": "level 1" ... "level 4" (the pair's difficulty level), "ref": DOCCI's human caption, "in-400":
  true / false}`` (fields as the reference's ``vlm_as_a_judge.py`` and ``cal_ranking.py`` read them; the metric
  files of the release add a ``"judge"`` key, which this loader does not need);
* ``images/``: the DOCCI images named by ``img`` (``image_dir=`` another folder).

:func:`caparena_agreement` computes, for a metric's scores or a judge's verdicts over the battles:

* caption-level agreement as the reference's ``cal_agreement(include_tie=True)``: pairs where either source is
  ``"human"`` are skipped, and so are pairs without a verdict; the human verdict is caption 1 when ``winner`` is
  ``source1``, caption 2 when it is ``source2``, else a tie; a metric's verdict is caption 1 when its score of
  caption 1 is higher, caption 2 when lower, a tie when equal; agreement is the share of pairs whose two verdicts are
  the same (a metric's tie agrees only with a human tie), overall and per level, with the metric's ties per level;
* model-level agreement as ``caparena_metrics.py``: the metric's verdicts as battles (the winner ``source1`` /
  ``source2``, or a tie), the systems ranked by median bootstrap Elo (:func:`capeval.judges.elo.rank_systems`:
  ``cal_ranking.py``'s Elo, 1,000 rounds, seed 42), and Spearman's rho and Kendall's tau (scipy's ``spearmanr`` /
  ``kendalltau``, tau-b) between that ranking's positions and each system's position in CapArena's human ranking
  (:data:`HUMAN_RANKING`, where ``"human"`` holds second place).

The reference's Elo reads a metric file's ``judge`` strings by substring (``"1" in judge``); capeval's verdicts are
``"1"`` / ``"2"`` / ``"tie"`` already, and a pair without a verdict (a judge's failed answer) is left out of both
statistics.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.judgments.files import image_finder, read_json, require_file, resolve_root

ANNOTATIONS = "caparena/caparena_annots_eval.json"
IMAGE_DIRS = ("caparena/images",)
LEVELS = ("level 1", "level 2", "level 3", "level 4")
HUMAN = "human"
FORMAT = ('caparena_annots_eval.json (CapArena release, data/eval/): a JSON list of {"img", "caption1", "caption2", '
          '"source1", "source2", "winner", "cluster": "level 1".."level 4", "ref", "in-400"}')
#: CapArena's human ranking of the systems, best first (``caparena_metrics.py``, ``cal_model_level_agreement``).
HUMAN_RANKING = ("GPT-4o-0806", "human", "Gemini-2.0-flash-exp", "InternVL2-26B", "Gemini-1.5-pro-002",
                 "Claude-3.5-Sonnet-0620", "GPT-4o-mini-0718", "LLama-3.2-90B", "Qwen2-VL-72B-Instruct",
                 "CogVLM2-llama3-chat-19B", "MiniCPM-V2.6-8B", "Qwen2-VL-7B-Instruct", "Qwen2-VL-2B-Instruct",
                 "LLaVA-1.6-34B", "LLaVA-1.5-7B")
_REQUIRED = ("img", "caption1", "caption2", "source1", "source2", "winner", "cluster")


@dataclass(frozen=True)
class CapArenaPair:
    """One human battle: ``image`` the file name (``image_path`` where it was found, else ``None``), the two
    captions and their systems, ``winner`` as annotated, ``cluster`` its level, ``reference`` DOCCI's human caption
    (``None`` if absent), ``in_400`` the release's ``in-400`` flag."""

    index: int
    image: str
    image_path: Path | None
    caption1: str
    caption2: str
    source1: str
    source2: str
    winner: str
    cluster: str
    reference: str | None
    in_400: bool

    @property
    def human_verdict(self) -> str:
        """``"1"``, ``"2"`` or ``"tie"`` (``cal_agreement``: the winner is source1, source2, or neither)."""
        return "1" if self.winner == self.source1 else "2" if self.winner == self.source2 else "tie"

    @property
    def has_human(self) -> bool:
        """Either caption is the human one (such pairs are left out of both statistics)."""
        return HUMAN in (self.source1, self.source2)


@dataclass
class CapArena:
    """The loaded battles (in file order) and where they came from."""

    pairs: list[CapArenaPair]
    path: Path

    def __len__(self) -> int:
        return len(self.pairs)

    def __iter__(self) -> Iterator[CapArenaPair]:
        return iter(self.pairs)

    def images(self) -> list[Path | None]:
        return [p.image_path for p in self.pairs]

    def missing_images(self) -> list[str]:
        return [p.image for p in self.pairs if p.image_path is None]

    def agreement(self, metric_scores=None, *, verdicts=None, **kwargs) -> dict:
        """:func:`caparena_agreement` over these battles."""
        return caparena_agreement(self.pairs, metric_scores, verdicts=verdicts, **kwargs)


def parse_pairs(items: Any, path: Path, find=None) -> list[CapArenaPair]:
    """The battles of a parsed annotation list (``find(name)``: the image's path or ``None``); a malformed item
    raises ``ValueError`` naming it (``caparena_annots_eval.json[3]: no "winner"``)."""
    if not isinstance(items, list):
        raise ValueError(f"{path}: a JSON {type(items).__name__}; expected {FORMAT}.")
    out = []
    for i, item in enumerate(items):
        where = f"{path.name}[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: expected an object; expected {FORMAT}.")
        for key in _REQUIRED:
            if key not in item:
                raise ValueError(f"{where}: no {key!r}; expected {FORMAT}.")
            if not isinstance(item[key], str):
                raise ValueError(f"{where}: {key!r} is {type(item[key]).__name__}, not a string.")
        if item["cluster"] not in LEVELS:
            raise ValueError(f"{where}: cluster {item['cluster']!r:.40} is not one of {', '.join(LEVELS)}.")
        ref = item.get("ref")
        out.append(CapArenaPair(i, item["img"], find(item["img"]) if find else None, item["caption1"],
                                item["caption2"], item["source1"], item["source2"], item["winner"],
                                item["cluster"], ref if isinstance(ref, str) else None, bool(item.get("in-400"))))
    return out


def load_caparena(root: str | Path | None = None, *, annotations: str | Path | None = None,
                  image_dir: str | Path | None = None) -> CapArena:
    """CapArena's human battles from ``<root>/caparena/caparena_annots_eval.json`` (or the file ``annotations``),
    images looked up in ``<root>/caparena/images`` (or ``image_dir``). ``FileNotFoundError`` naming the file and
    its format when it is absent."""
    if annotations is not None:
        path = Path(annotations).expanduser()
        base = path.parent
        find = image_finder(base, image_dir, ("images",))
    else:
        base = resolve_root(root)
        path = base / ANNOTATIONS
        find = image_finder(base, image_dir, IMAGE_DIRS)
    require_file(path, FORMAT + "; download the CapArena annotations (see njucckevin/CapArena's readme)")
    return CapArena(parse_pairs(read_json(path, FORMAT), path, find), path)


def normalise_verdict(value: Any, index: int) -> str | None:
    """``"1"`` / ``"2"`` / ``"tie"`` / ``None`` from a verdict: ``"1"``, ``1``, ``"a"`` (caption 1 better),
    ``"2"``, ``2``, ``"b"``, ``"tie"``, or ``None`` (no verdict)."""
    if value is None:
        return None
    key = str(value).strip().lower()
    if key in ("1", "a"):
        return "1"
    if key in ("2", "b"):
        return "2"
    if key == "tie":
        return "tie"
    raise ValueError(f"verdicts[{index}]: {value!r:.40} is not 1, 2, 'a', 'b', 'tie' or None.")


def metric_verdicts(scores1: Sequence[float], scores2: Sequence[float]) -> list[str | None]:
    """Per pair ``"1"`` when ``scores1[i] > scores2[i]``, ``"2"`` when lower, ``"tie"`` when equal, ``None`` when
    either is NaN (no score)."""
    import math

    if len(scores1) != len(scores2):
        raise ValueError(f"metric_scores: {len(scores1)} scores of caption 1 and {len(scores2)} of caption 2.")
    out: list[str | None] = []
    for s1, s2 in zip(scores1, scores2):
        s1, s2 = float(s1), float(s2)
        out.append(None if math.isnan(s1) or math.isnan(s2) else "1" if s1 > s2 else "2" if s1 < s2 else "tie")
    return out


def _caption_level(pairs: Sequence[CapArenaPair], verdicts: list[str | None], in_400: bool) -> tuple[dict, dict]:
    agree: dict[str, list[int]] = {"overall": [], **{level: [] for level in LEVELS}}
    ties = {level: 0 for level in LEVELS}
    for pair, verdict in zip(pairs, verdicts):
        if verdict is None or pair.has_human or (in_400 and not pair.in_400):
            continue
        hit = int(verdict == pair.human_verdict)
        agree["overall"].append(hit)
        agree[pair.cluster].append(hit)
        if verdict == "tie":
            ties[pair.cluster] += 1
    levels = {k: {"agreement": (sum(v) / len(v) if v else None), "n": len(v)} for k, v in agree.items()}
    return levels, ties


def _model_level(pairs: Sequence[CapArenaPair], verdicts: list[str | None], human_ranking: Sequence[str],
                 rounds: int, seed: int) -> dict:
    from scipy.stats import kendalltau, spearmanr

    from capeval.judges.elo import TIE, rank_systems

    battles = [(p.source1, p.source2, p.source1 if v == "1" else p.source2 if v == "2" else TIE)
               for p, v in zip(pairs, verdicts) if v is not None and not p.has_human]
    ranked = [r for r in rank_systems(battles, rounds=rounds, seed=seed) if r.system != HUMAN]
    names = [r.system for r in ranked]
    unknown = [n for n in names if n not in human_ranking]
    if unknown:
        raise ValueError(f"system {unknown[0]!r:.60} is not in the human ranking ({len(human_ranking)} systems); "
                         "pass human_ranking= with every system of the battles.")
    human_positions = [list(human_ranking).index(n) + 1 for n in names]
    positions = list(range(1, len(names) + 1))
    if len(names) < 2:
        rho = p_rho = tau = p_tau = float("nan")
    else:
        rho, p_rho = (float(x) for x in spearmanr(human_positions, positions))
        tau, p_tau = (float(x) for x in kendalltau(human_positions, positions))
    return {"spearman": rho, "spearman_p": p_rho, "kendall": tau, "kendall_p": p_tau, "ranking": names,
            "human_positions": human_positions, "battles": len(battles), "elo": [r.to_json() for r in ranked]}


def caparena_agreement(pairs: Sequence[CapArenaPair] | CapArena, metric_scores=None, *, verdicts=None,
                       human_ranking: Sequence[str] = HUMAN_RANKING, in_400: bool = False, rounds: int = 1000,
                       seed: int = 42) -> dict:
    """CapArena's caption-level and model-level agreement of a metric or a judge (see the module docstring).

    metric_scores: ``(scores of caption 1, scores of caption 2)``, one each per pair (higher = better; NaN: no
        verdict); or ``verdicts``: per pair ``"1"`` / ``"2"`` / ``"tie"`` / ``None`` (also ``"a"`` / ``"b"``, and
        an :class:`capeval.judges.arena.ArenaResult` of the pairs with caption 1 as a).
    in_400: only the pairs flagged ``in-400`` in the caption-level agreement (the reference's ``in_400=True``).
    rounds / seed: the Elo bootstrap's (the reference's 1,000 and 42).

    Returns ``{"caption_level": {"overall" | "level 1".. "level 4": {"agreement": share in [0, 1] or None, "n"}},
    "ties": {level: the metric's ties among the counted pairs}, "model_level": {"spearman", "spearman_p",
    "kendall", "kendall_p" (each in [-1, 1] / [0, 1]), "ranking": systems best first, "human_positions": their
    1-based places in ``human_ranking``, "battles", "elo": rows}, "pairs", "skipped_human", "no_verdict"}``.
    """
    pairs = list(pairs.pairs if isinstance(pairs, CapArena) else pairs)
    if (metric_scores is None) == (verdicts is None):
        raise ValueError("give metric_scores=(scores1, scores2) or verdicts=, one of the two.")
    if metric_scores is not None:
        if len(metric_scores) != 2:
            raise ValueError("metric_scores: expected (scores of caption 1, scores of caption 2).")
        found = metric_verdicts(list(metric_scores[0]), list(metric_scores[1]))
    else:
        given = getattr(verdicts, "verdicts", verdicts)
        found = [normalise_verdict(v, i) for i, v in enumerate(given)]
    if len(found) != len(pairs):
        raise ValueError(f"{len(found)} verdicts or scores for {len(pairs)} pairs.")
    levels, ties = _caption_level(pairs, found, in_400)
    return {"caption_level": levels, "ties": ties,
            "model_level": _model_level(pairs, found, human_ranking, rounds, seed), "pairs": len(pairs),
            "skipped_human": sum(p.has_human for p in pairs),
            "no_verdict": sum(v is None and not p.has_human for p, v in zip(pairs, found))}


def scoring_inputs(bench: CapArena, reads_images: bool) -> tuple[list[str], list[list[str]], list[str] | None]:
    """What the metrics score: every battle's caption 1 then every caption 2, each with the battle's reference, and
    (``reads_images``) their images; ``ValueError`` naming a battle without a reference, or the missing images."""
    missing = [p.index for p in bench.pairs if p.reference is None]
    if missing:
        raise ValueError(f"{bench.path.name}[{missing[0]}]: no 'ref'; the metrics score each caption against the "
                         f"pair's reference ({len(missing)} battle(s) have none).")
    predictions = [p.caption1 for p in bench.pairs] + [p.caption2 for p in bench.pairs]
    references = [[p.reference] for p in bench.pairs] * 2
    if not reads_images:
        return predictions, references, None
    absent = bench.missing_images()
    if absent:
        raise ValueError(f"the metrics read images, but {len(absent)} image(s) of CapArena are not in its images "
                         f"folder (e.g. {absent[0]!r}).")
    return predictions, references, [str(p) for p in bench.images()] * 2


def score_caparena(bench: CapArena, metrics: Sequence[str] | str, *, rounds: int = 1000, seed: int = 42,
                   in_400: bool = False, progress: bool | None = None, **options: Any) -> dict[str, dict]:
    """Score both captions of every battle with capeval metrics (``capeval.score``: each caption against the pair's
    reference, ``ref``, DOCCI's human caption; the images too for metrics that read them) and give each result key's
    :func:`caparena_agreement`: ``{result key: agreement dict}``. ``options``: ``capeval.score``'s keyword options.

    The pairs with the human caption are scored too (the statistics skip them, as the reference does). A battle
    without a reference is an error naming it: reference-based metrics need one per pair.
    """
    from capeval.api import score
    from capeval.registry import metric_class, resolve

    n = len(bench.pairs)
    reads_images = any(getattr(metric_class(name), "needs_images", False) for name in resolve(metrics))
    predictions, references, images = scoring_inputs(bench, reads_images)
    extra: dict[str, Any] = {} if images is None else {"images": images}
    result = score(predictions, references, metrics=metrics, progress=progress, **options, **extra)
    out = {}
    for key, values in result["per_caption"].items():
        values = list(values)
        out[key] = caparena_agreement(bench, (values[:n], values[n:]), rounds=rounds, seed=seed, in_400=in_400)
    return out
