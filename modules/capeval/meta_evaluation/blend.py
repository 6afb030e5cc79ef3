"""Blends: a weighted sum of other metrics' standardised per-item scores, as a metric spec of ``capeval bench``.

``blend:sentence_cosine+1/3*cider_d+1/3*spice+1/3*meteor`` is z(cosine) + (z(CIDEr-D) + z(SPICE) + z(METEOR)) / 3,
the *untrained* blend that is the floor any learned combiner must clear. Each term is
``[weight*]result_key``; a weight is a number or a fraction (``1/3``); terms are joined by ``+``; a result key is any
capeval result key or alias (not an ``evaluate:`` spec, not another blend).

* z(x) = (x − mean(x)) / sd(x) over the items scored **together** (one benchmark set, one call), so a blend's values
  depend on the set, as CIDEr-D's document frequencies do; it has no corpus (system-level) score.
* A component that is constant over the set (sd 0) contributes 0, with a :class:`ConstantComponentWarning` naming it;
  a component with a non-finite value is refused (``ValueError`` naming the component and the item).
* It reads images when a component does; its contamination is the union of its components'.
"""
from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

PREFIX = "blend:"
_TERM = re.compile(r"^(?:(?P<w>[0-9.]+(?:/[0-9.]+)?)\*)?(?P<key>[a-z0-9_]+)$")


class ConstantComponentWarning(UserWarning):
    """A blend component is constant over the scored set: its z-score is 0 for every item."""


def is_blend(spec: str) -> bool:
    """Whether ``spec`` is a ``blend:`` spec."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


def parse_blend(spec: str) -> list[tuple[float, str]]:
    """``[(weight, result key), ...]`` of a ``blend:`` spec (``ValueError`` naming the bad term)."""
    if not is_blend(spec):
        raise ValueError(f"{spec!r} is not a blend spec (blend:[w*]key+[w*]key...).")
    body = spec[len(PREFIX):].replace(" ", "")
    terms = []
    for raw in body.split("+"):
        match = _TERM.match(raw.lower())
        if not match:
            raise ValueError(f"{spec!r}: term {raw!r} is not [weight*]result_key (e.g. 1/3*cider_d).")
        try:
            weight = float(Fraction(match["w"])) if match["w"] else 1.0
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{spec!r}: weight {match['w']!r} is not a number or a fraction.") from None
        terms.append((weight, match["key"]))
    keys = [k for _, k in terms]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{spec!r}: a result key appears twice.")
    return terms


def standardise(values: np.ndarray, name: str) -> np.ndarray:
    """z-scores of ``values`` over the set (0 everywhere, with a warning, when they are constant)."""
    values = np.asarray(values, dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"blend component {name} has a non-finite value at item {int(bad[0])}.")
    sd = float(values.std())
    if sd == 0.0:
        warnings.warn(f"blend component {name} is constant over the {len(values)} items scored: it adds nothing.",
                      ConstantComponentWarning, stacklevel=2)
        return np.zeros_like(values)
    return (values - values.mean()) / sd


def combine(spec: str, components: Mapping[str, np.ndarray]) -> np.ndarray:
    """The blend's per-item values from its components' per-item values (``components[key]``)."""
    return sum(weight * standardise(components[key], key) for weight, key in parse_blend(spec))


def signature(spec: str, signatures: Mapping[str, str]) -> str:
    """``blend(z:<w>*<key>,...)|<component signatures>``: what decides a blend's values."""
    terms = ",".join(f"{weight:.6g}*{key}" for weight, key in parse_blend(spec))
    parts = sorted(set(signatures.values()))
    return f"blend(z:{terms})" + "".join(f"|{p}" for p in parts)


__all__ = ["ConstantComponentWarning", "PREFIX", "combine", "is_blend", "parse_blend", "signature", "standardise"]
