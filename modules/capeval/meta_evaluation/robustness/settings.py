"""The settings of a robustness run, checked: the strengths ``γ`` (:data:`GAMMAS`, :func:`check_gammas`,
:func:`parse_gammas`: in [0, 1], increasing, from 0), the transformations (RC, WP, RW), the metrics as result keys
(:func:`metric_key`), the seed of each curve point (:func:`point_seed`) and the area under a curve
(:func:`trapezoid_auc`)."""
from __future__ import annotations

import math
from collections.abc import Sequence

from capeval.critic.transforms import TRANSFORMS
from capeval.registry import ALIASES, available_metrics, resolve

#: The default strengths: 0, 0.1, ..., 1.0.
GAMMAS = tuple(round(0.1 * k, 1) for k in range(11))
TRANSFORM_NAMES = {"RC": "human caption of a similar image", "WP": "words permuted", "RW": "random words"}
#: The normalisation and AUC in words (the JSON's ``settings["score"]``).
SCORE_DEFINITION = ("mean per-caption score of the transformed candidates divided by the mean of the untransformed "
                    "human captions (gamma = 0), i.e. the curve of the paper's Fig. 6; not 1 - score; "
                    "AUC by the trapezoid rule over the gammas; lower = more robust")



def check_gammas(gammas: Sequence[float]) -> list[float]:
    """The gammas as floats: in [0, 1], strictly increasing, starting at 0 (``ValueError`` otherwise)."""
    try:
        values = [float(g) for g in gammas]
    except (TypeError, ValueError):
        raise ValueError(f"gammas must be numbers in [0, 1], got {gammas!r}.") from None
    if len(values) < 2:
        raise ValueError(f"gammas need at least two values (0 and a larger one), got {values}.")
    bad = [g for g in values if not (math.isfinite(g) and 0 <= g <= 1)]
    if bad:
        raise ValueError(f"gammas must lie in [0, 1]; got {bad[0]:g} in {values}.")
    if values[0] != 0:
        raise ValueError(f"gammas must start at 0 (the untransformed captions that every curve is normalised by); "
                         f"got {values}.")
    if any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError(f"gammas must be strictly increasing, got {values}.")
    return values


def parse_gammas(text: str) -> list[float]:
    """``"0,0.1,...,1"`` → checked floats (also ``"0:1:0.1"``: start:stop:step, stop included)."""
    text = str(text).strip()
    if text.count(":") == 2:
        try:
            start, stop, step = (float(x) for x in text.split(":"))
        except ValueError:
            raise ValueError(f"gammas range must be start:stop:step numbers, got {text!r}.") from None
        if step <= 0:
            raise ValueError(f"gammas step must be positive, got {text!r}.")
        n = int(math.floor((stop - start) / step + 1e-9))
        return check_gammas([round(start + k * step, 10) for k in range(n + 1)])
    try:
        numbers = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"gammas must be numbers separated by commas, got {text!r}.") from None
    return check_gammas(numbers)


def check_transforms(transforms: Sequence[str] | str) -> list[str]:
    """The transformations named (a list or comma-separated, any case), upper-cased, each once, in order
    (``ValueError`` naming the choices for an unknown one or none)."""
    names = [t for t in transforms.split(",")] if isinstance(transforms, str) else list(transforms)
    out = []
    for t in names:
        key = str(t).strip().upper()
        if key not in TRANSFORMS:
            raise ValueError(f"unknown transformation {t!r}; choose from {', '.join(TRANSFORMS)} "
                             f"({'; '.join(f'{k}: {v}' for k, v in TRANSFORM_NAMES.items())}).")
        if key not in out:
            out.append(key)
    if not out:
        raise ValueError(f"no transformation given; choose from {', '.join(TRANSFORMS)}.")
    return out


def metric_key(name: str) -> tuple[str, str]:
    """``(metric family, result key)`` of a requested metric: ``"cider"`` → ``("cider_d", "cider_d")``.

    A family with several keys and none of its own name (``bleu``) must be given as one key (``bleu_4``).
    """
    raw = str(name).strip()
    ((family, keys),) = resolve([raw]).items()  # ValueError listing every valid name
    canonical = ALIASES.get(raw.lower(), raw.lower())
    if canonical in keys:
        return family, canonical
    if len(keys) == 1:
        return family, keys[0]
    raise ValueError(f"metric {raw!r} has several result keys ({', '.join(keys)}); name one, e.g. {keys[-1]}. "
                     f"Valid names: {available_metrics()}.")


def point_seed(seed: int, transform: str, gamma: float) -> int:
    """The seed of one curve point: ``seed + 10,000 × index(transform) + round(1,000 γ)``."""
    return int(seed) + 10_000 * TRANSFORMS.index(transform) + int(round(1000 * gamma))


def trapezoid_auc(gammas: Sequence[float], values: Sequence[float]) -> float:
    """Area under ``values`` over ``gammas`` by the trapezoid rule."""
    if len(gammas) != len(values):
        raise ValueError(f"{len(gammas)} gammas but {len(values)} values.")
    return float(sum((g1 - g0) * (v0 + v1) / 2 for g0, g1, v0, v1 in zip(gammas, gammas[1:], values, values[1:])))

