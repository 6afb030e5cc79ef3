"""Training examples for the critic: (image, reference, candidate, human?) with the paper's negatives.

Per image and per human caption ``c_j`` used as candidate (Cui et al. 2018 §3.2 and their code): one positive
``(context c_i, candidate c_j)``, ``i ≠ j``, and one negative with the same context, drawn by
:class:`NegativeSampler` from the sources in ``mix`` (default the paper's proportions):

* ``system``: a caption of the evaluated system for this image (capeval's captioner, beam search);
* ``sample``: a Monte-Carlo sample of a caption generator for this image;
* ``RC`` / ``WP`` / ``RW``: the pathological transforms (:mod:`capeval.critic.transforms`); RC takes a human caption
  of a neighbour image, the neighbourhood γ drawn uniformly between the nearest image and all of them (mostly easy
  negatives, some hard: with γ drawn log-uniformly, i.e. mostly from the nearest 1 %, the critic did not learn at
  all on Flickr8k — dev loss stayed at ln 2 for 4 epochs); WP and RW transform a caption of this image with γ
  drawn by ``word_gamma`` (:data:`WORD_GAMMAS`): ``"uniform"`` (default) uniform in [0.2, 1]; ``"loguniform"``
  log-uniform in [0.1, 1], i.e. weighted toward the hardest negatives (about 40 % of them at γ < .25, where a
  caption of up to 12 words has exactly 2 words permuted or replaced).

``mix="paper"``: system 1/3, sample 1/3, RC/WP/RW 1/9 each. ``mix="caption"``: RC only (the paper's caption-level
protocol, §4.4). Or a dict of non-negative weights. Sources without data (no system captions given) are refused.
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capeval.critic.transforms import NearestImages, random_caption, random_words, word_permutation

SOURCES = ("system", "sample", "RC", "WP", "RW")
MIXES: dict[str, dict[str, float]] = {
    "paper": {"system": 3, "sample": 3, "RC": 1, "WP": 1, "RW": 1},
    "caption": {"RC": 1},
    "no-system": {"sample": 3, "RC": 1, "WP": 1, "RW": 1},
}
#: How WP / RW negatives draw their strength γ: ``{name: (low, high, log-uniform?)}``.
WORD_GAMMAS: dict[str, tuple[float, float, bool]] = {"uniform": (0.2, 1.0, False), "loguniform": (0.1, 1.0, True)}


def check_word_gamma(name: str) -> str:
    """``name`` if it is one of :data:`WORD_GAMMAS`, else a ValueError naming the choices."""
    if name not in WORD_GAMMAS:
        raise ValueError(f"unknown word_gamma {name!r}; choose from {sorted(WORD_GAMMAS)}.")
    return name


@dataclass(frozen=True)
class CriticExample:
    """One training or dev example; ``label`` 1 = human-written candidate, 0 = machine / transformed."""

    image: str
    reference: str
    candidate: str
    label: int
    source: str  # "human" or one of SOURCES


def resolve_mix(mix: str | Mapping[str, float]) -> dict[str, float]:
    """Normalised source weights from a mix name or a ``{source: weight}`` dict."""
    if isinstance(mix, str):
        if mix not in MIXES:
            raise ValueError(f"unknown negative mix {mix!r}; choose from {sorted(MIXES)} or give {{source: weight}}.")
        mix = MIXES[mix]
    unknown = set(mix) - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown negative source(s) {sorted(unknown)}; sources: {SOURCES}.")
    if any(not isinstance(w, (int, float)) or w < 0 or math.isnan(w) for w in mix.values()):
        raise ValueError(f"negative weights must be numbers >= 0, got {dict(mix)}.")
    total = sum(mix.values())
    if total <= 0:
        raise ValueError("the negative mix gives every source weight 0.")
    return {s: mix[s] / total for s in SOURCES if mix.get(s, 0) > 0}


class NegativeSampler:
    """Draws a negative candidate for an image (see the module docstring).

    ``captions``: ``{image: [human captions]}``; ``system`` / ``samples``: ``{image: [machine captions]}`` (needed
    when their source has weight); ``nearest``: :class:`~capeval.critic.transforms.NearestImages` over the images
    of ``captions`` (needed for RC); ``vocabulary``: words for RW; ``word_gamma``: how WP / RW draw γ
    (:data:`WORD_GAMMAS`).
    """

    def __init__(self, captions: Mapping[str, Sequence[str]], *, mix: str | Mapping[str, float] = "paper",
                 system: Mapping[str, Sequence[str]] | None = None, samples: Mapping[str, Sequence[str]] | None = None,
                 nearest: NearestImages | None = None, vocabulary: Sequence[str] = (), word_gamma: str = "uniform"):
        self.weights = resolve_mix(mix)
        self.word_gamma = WORD_GAMMAS[check_word_gamma(word_gamma)]
        self.captions, self.system, self.samples, self.nearest = captions, system, samples, nearest
        self.vocabulary = list(vocabulary)
        need = {"system": system, "sample": samples, "RC": nearest}
        for source, data in need.items():
            if source in self.weights and data is None:
                raise ValueError(f"the negative mix uses {source!r} but no data for it was given "
                                 f"({ {'system': 'system captions', 'sample': 'sampled captions', 'RC': 'image features'}[source] }).")
        if "RW" in self.weights and len(self.vocabulary) < 2:
            raise ValueError("RW negatives need a vocabulary of at least 2 words.")
        for name, table in (("system", system), ("sample", samples)):
            if name in self.weights:
                missing = [i for i in captions if not table.get(i)]
                if missing:
                    raise ValueError(f"no {name} caption for {len(missing)} training image(s), e.g. {missing[0]!r}.")
        self._sources = list(self.weights)
        self._cum = list(_cumulative([self.weights[s] for s in self._sources]))

    def draw(self, image: str, candidate: str, rng: random.Random) -> tuple[str, str]:
        """``(negative caption, source)`` for ``image`` whose positive candidate is ``candidate``."""
        u = rng.random()
        source = next((s for s, c in zip(self._sources, self._cum) if u < c), self._sources[-1])
        if source == "system":
            pool = self.system[image]
            return pool[rng.randrange(len(pool))], source
        if source == "sample":
            pool = self.samples[image]
            return pool[rng.randrange(len(pool))], source
        if source == "RC":
            gamma = rng.uniform(1 / (len(self.nearest.names) - 1), 1.0)
            return random_caption(image, gamma, rng, self.captions, self.nearest), source
        low, high, log = self.word_gamma
        gamma = math.exp(rng.uniform(math.log(low), math.log(high))) if log else rng.uniform(low, high)
        if source == "WP":
            out = word_permutation(candidate, gamma, rng)
            if out == candidate:  # too short or all-equal words to permute: replace words instead
                return random_words(candidate, gamma, rng, self.vocabulary), "RW" if self.vocabulary else "WP"
            return out, source
        return random_words(candidate, gamma, rng, self.vocabulary), source


def _cumulative(weights: list[float]):
    total = 0.0
    for w in weights:
        total += w
        yield total


def epoch_examples(captions: Mapping[str, Sequence[str]], sampler: NegativeSampler, rng: random.Random,
                   images: Sequence[str] | None = None,
                   candidates_per_image: int | None = None) -> list[tuple[CriticExample, CriticExample]]:
    """One epoch's ``(positive, negative)`` pairs, in image order: per image, ``candidates_per_image`` of its captions
    (drawn without replacement; ``None``: all of them) each once as the candidate, its context a random other caption
    of the image (images with fewer than 2 captions are skipped)."""
    if candidates_per_image is not None and (isinstance(candidates_per_image, bool) or candidates_per_image < 1):
        raise ValueError(f"candidates_per_image must be >= 1 or None, got {candidates_per_image!r}.")
    pairs = []
    for image in (images if images is not None else sorted(captions)):
        caps = list(captions[image])
        if len(caps) < 2:
            continue
        chosen = range(len(caps)) if candidates_per_image is None else \
            sorted(rng.sample(range(len(caps)), min(candidates_per_image, len(caps))))
        for j in chosen:
            cand = caps[j]
            i = rng.choice([k for k in range(len(caps)) if k != j])
            neg, source = sampler.draw(image, cand, rng)
            pairs.append((CriticExample(image, caps[i], cand, 1, "human"),
                          CriticExample(image, caps[i], neg, 0, source)))
    return pairs


def fixed_pairs(captions: Mapping[str, Sequence[str]], features, *, mix: str | Mapping[str, float], seed: int,
                system: Mapping[str, Sequence[str]] | None = None, samples: Mapping[str, Sequence[str]] | None = None,
                vocabulary: Sequence[str] = (),
                word_gamma: str = "uniform") -> list[tuple[CriticExample, CriticExample]]:
    """Fixed evaluation pairs (the dev pairs of training, the combiner's fitting pairs): every caption of every image
    of ``captions`` once as the candidate, negatives from ``mix`` drawn with ``seed`` (WP / RW strength by
    ``word_gamma``); RC neighbours by ``features`` (a :class:`~capeval.models.feature_table.FeatureTable` with pooled
    features of these images)."""
    weights = resolve_mix(mix)
    if "system" in weights and system is None or "sample" in weights and samples is None:
        raise ValueError("the negative mix uses system / sampled captions: give them for these images too.")
    names = sorted(captions)
    sampler = NegativeSampler(captions, mix=mix, system=system, samples=samples,
                              nearest=NearestImages(names, features.rows(names)), vocabulary=vocabulary,
                              word_gamma=word_gamma)
    return epoch_examples(captions, sampler, random.Random(seed), names)


def training_vocabulary(captions: Mapping[str, Sequence[str]]) -> list[str]:
    """Lower-cased whitespace words of the training captions (RW's replacement words), sorted, unique."""
    return sorted({w for caps in captions.values() for c in caps for w in c.lower().split()})
