"""The functional core: ``capeval.score(predictions, references, metrics=...)``."""
from __future__ import annotations

import gc
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from capeval.batch import CaptionBatch
from capeval.inputs import by_image_id
from capeval.progress import progress as progress_bar
from capeval.progress import quiet
from capeval.registry import REGISTRY, available_metrics, metric_class, resolve
from capeval.signature import build_signature, nrefs_field
from capeval.text import Tokenizer
from capeval.validation import (
    DEFAULT_MAX_CAPTION_CHARS,
    check_caption_lengths,
    check_finite,
    check_images,
    UnscoredReferencesWarning,
    check_max_caption_chars,
    normalize_inputs,
    warn_at_caller,
    warn_empty,
    warn_lone_surrogates,
    warn_wordless,
)

__all__ = ["available_metrics", "option_names", "score"]

#: ``score``'s own keywords besides the captions (the metric options come from the registry).
SCORE_KEYWORDS = ("metrics", "cleanup", "tokenizer", "progress", "max_caption_chars", "empty", "language_check",
                  "images")



#: The work sharing of :func:`score_shared` (``None``: one process does everything), for the call in progress.
_SHARE: ContextVar = ContextVar("capeval_score_share", default=None)
#: While set (a dict), :func:`score` records each metric's mergeable corpus state there (:func:`score_with_states`).
_STATES: ContextVar = ContextVar("capeval_score_states", default=None)


def option_names() -> set[str]:
    """Every keyword :func:`score` accepts: its own (``metrics``, ``cleanup``, ...) and every metric's options.

    What the ``evaluate`` modules accept and pass over in ``evaluate.combine`` (an option of another capeval
    module), as opposed to a typo.
    """
    return set(SCORE_KEYWORDS).union(*(_declared_options(name) for name in REGISTRY))


def split_options(selected: dict[str, list[str]], options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Route each keyword option to every selected metric that declares it.

    Options of metrics that were not selected are accepted and ignored, so one set of keyword
    arguments can serve several calls (as ``evaluate.combine`` does); any other name is a typo and raises.
    """
    declared = {name: set(metric_class(name).options) for name in selected}
    bad = sorted(repr(k) for k in options if not isinstance(k, str))
    if bad:
        raise TypeError(f"option names must be strings, got {', '.join(bad)}.")
    known = set().union(*declared.values())
    if set(options) - known:  # only then the other metrics' modules are imported (a cold call needs none of them)
        known |= {k for name in REGISTRY if name not in declared for k in _declared_options(name)}
    unknown = sorted(set(options) - known)
    if unknown:
        valid = sorted(set().union(*declared.values()))
        raise ValueError(f"Unknown option(s) {unknown} for metrics {list(selected)}; valid options: {valid}.")
    return {name: {k: v for k, v in options.items() if k in keys} for name, keys in declared.items()}


def _declared_options(name: str) -> set[str]:
    try:
        return set(metric_class(name).options)
    except ImportError:  # optional dependency missing: it cannot own the option anyway
        return set()


def _without_images(needing: list[str]) -> tuple[str | None, list[str]]:
    """For the error when image-reading metrics get no ``images=``: the metric that reads none that the first of
    ``needing`` suggests (:attr:`~capeval.metric.CaptionMetric.without_images`), and every registered metric that
    reads none (built-ins and plug-ins whose module imports)."""
    alternative = next((metric_class(n).without_images for n in needing if metric_class(n).without_images), None)
    free = []
    for name in REGISTRY:
        try:
            if not metric_class(name).needs_images:
                free.append(name)
        except ImportError:
            continue
    return alternative, free


def _image_metrics(selected: dict[str, list[str]]) -> list[str]:
    """The selected metrics that read images (their class sets ``needs_images``)."""
    return [name for name in selected if getattr(metric_class(name), "needs_images", False)]


def _run_metrics(instances, selected: dict[str, list[str]], batch: CaptionBatch, empties: list[int],
                 show_progress: bool | None) -> tuple[dict, dict, dict, list]:
    """Compute each metric in turn (a "capeval.score" bar over them: on a terminal after one second, or forced)."""
    result: dict[str, Any] = {}
    per_caption: dict[str, list[float]] = {}
    extras: dict[str, Any] = {}
    fields: list[tuple[str, str]] = []
    warned = False
    with progress_bar(None, total=len(instances), desc="capeval.score", enabled=show_progress) as bar:
        for metric, (name, keys) in zip(instances, selected.items()):
            bar.set_postfix_str(name)
            if metric.uses_tokens and not warned:
                warn_wordless(batch.prediction_tokens, batch.reference_tokens, skip=empties)
                warned = True
            try:
                out = batch.computed(metric)  # once per call, also when a composite metric (spider) reads it
            finally:
                metric.close()  # release its JVM / parser before the next metric starts
            for key in keys:
                if metric.unscored_items:  # NaN marks an item without a score (listed and warned by the metric)
                    scored = [v for v in out.per_caption[key] if v == v]
                    check_finite(scored, f"per_caption[{key!r}] (scored items)")
                    check_finite([out.corpus[key]] if scored else [], key)
                else:
                    check_finite([out.corpus[key]], key)
                    check_finite(out.per_caption[key], f"per_caption[{key!r}]")
                result[key] = out.corpus[key]
                per_caption[key] = out.per_caption[key]
            states = _STATES.get()
            if states is not None:
                coverage = out.coverage
                states[name] = {"state": out.state,
                                "coverage": None if coverage is None else [coverage.known, coverage.total]}
            for key, value in out.extra.items():  # per-metric tables (coverage) merge; other entries are one metric's
                if isinstance(value, dict) and isinstance(extras.get(key), dict):
                    extras[key].update(value)
                else:
                    extras[key] = value
            fields.append((name, out.signature))
            bar.update()
    return result, per_caption, extras, fields


def score(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    metrics: Sequence[str] | str | None = None,
    *,
    cleanup: str | None = "thumb",
    tokenizer: str | Tokenizer = "ptb",
    progress: bool | None = None,
    max_caption_chars: int | None = DEFAULT_MAX_CAPTION_CHARS,
    empty: str = "error",
    language_check: bool = True,
    images: Sequence[Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Score captions with any subset of capeval's metrics in one call.

    Args:
        predictions: one caption per item; or keyed by image id as pycocoevalcap's ``res``
            (``{image_id: [caption]}``) or COCO's results list (``[{"image_id", "caption"}]``), the references then
            keyed the same way (:mod:`capeval.inputs`), and ``result["image_ids"]`` gives each per-caption entry's id.
        references: per item, one reference string or a non-empty list of them; or, with keyed predictions,
            pycocoevalcap's ``gts`` (``{image_id: [captions]}``), COCO's annotation dict or the path of its file.
        metrics: metric names or result keys (``"bleu"`` = ``bleu_1``..``bleu_4``, ``"bleu_4"``,
            ``"meteor"``, ``"rouge_l"``, ``"cider_d"``, ``"spice"``, ``"spice_u"``), a list or a
            comma-separated string. Default: BLEU, METEOR, ROUGE-L, CIDEr-D.
        cleanup: ``"thumb"`` (default; THumB minimal post-processing) or ``"none"``: the text that
            metrics reading raw text see (``spice_input="raw"``). It never changes PTB tokens: token-based
            metrics tokenise the captions as written, like pycocoevalcap (see :mod:`capeval.text.cleanup`).
        tokenizer: ``"ptb"`` (pure Python, default), ``"ptb-ctx"``, ``"ptb-java"``, or an object with
            ``name`` and ``tokenize(texts)``.
        progress: show progress bars (``None``: only on a terminal, after one second). One-time work that runs
            longer than 2 s (loading a model, building a table) says so in one line on stderr unless ``False``.
        max_caption_chars: captions longer than this many characters are refused (``ValueError``
            naming the item) before METEOR, SPICE or SPICE-U run, whose time and memory grow badly
            with caption length; ``None`` disables the check. Default
            :data:`capeval.validation.DEFAULT_MAX_CAPTION_CHARS` (5,000). BLEU, ROUGE-L and CIDEr-D
            alone accept any length.
        empty: what an empty or whitespace-only *prediction* does: ``"error"`` (default) raises
            ``ValueError`` naming it; ``"zero"`` scores it 0 on every metric (it is a caption without
            words, kept in the corpus statistics: BLEU's brevity penalty, CIDEr-D's document frequencies,
            METEOR's aggregate) with an :class:`~capeval.validation.EmptyCaptionWarning` naming it. Useful
            for model outputs (early checkpoints); references must never be empty.
        images: ``None`` (default) or one image per prediction, in prediction order (or keyed by image id with
            keyed predictions), for metrics that read images (``needs_images``, e.g. ``critic``): a path (``str`` /
            ``os.PathLike``), encoded bytes, a ``datasets.Image`` value (a dict with ``"path"`` and/or ``"bytes"``),
            a ``PIL.Image.Image``, a numpy array or a torch tensor (uint8, or float in [0, 1]; C×H×W or H×W×C; a
            4-D array or tensor is a batch of them, as torchmetrics' ``CLIPScore`` takes it; the rules of
            :mod:`capeval.models.images`). Required when such a metric is selected
            (``ValueError`` naming it), with no ``None`` entry; accepted and ignored when none is (so
            ``evaluate.combine`` can send it to every module), the length and entry types still checked.
            Files are read, and decoded, only by the metrics that need them.
        language_check: ``True`` (default): one :class:`capeval.NonEnglishWarning` names the predictions and
            references that do not look English (script, function words, accented letters: :mod:`capeval.language`);
            every metric here was built for English captions. ``False`` silences it. Never changes a score.
        **options: metric options, e.g. ``cider_df="coco-val2014"``, ``meteor_backend="java"``.

    Returns:
        ``{key: corpus float, ..., "per_caption": {key: [float per prediction]}, "signature": str}``
        plus metric-specific extras. Scores are in [0, 1] except CIDEr-D (0 to 10; ×10 as in pycocoevalcap) and
        sentence_cosine (a cosine similarity, -1 to 1).

    Raises:
        ValueError, TypeError: on bad input or arguments, naming the item (``predictions[3]``,
            ``references[2][1]``, ``images[4]``) or the argument and the problem.

    Warns:
        capeval.validation.EmptyCaptionWarning: for empty predictions scored 0 with ``empty="zero"``.
        capeval.validation.WordlessCaptionWarning: for captions with no word token (only punctuation,
            emoji, zero-width characters ...). They are scored, as pycocoevalcap scores them (0 for a
            prediction, nothing to match for a reference).
    """
    selected = resolve(metrics)
    pause = all(metric_class(name).pauses_gc for name in selected) and gc.isenabled()
    if pause:
        gc.disable()
    try:
        with quiet(progress is False):  # progress=False: no bars, and one-time work is not announced either
            return _score(predictions, references, selected, cleanup=cleanup, tokenizer=tokenizer, progress=progress,
                          max_caption_chars=max_caption_chars, empty=empty, images=images,
                          language_check=language_check, options=options)
    finally:
        if pause:
            gc.enable()


def _score(predictions, references, selected: list[str], *, cleanup, tokenizer, progress, max_caption_chars, empty,
           images, language_check, options: dict[str, Any]) -> dict[str, Any] | None:
    """:func:`score` after the metrics were resolved."""
    share = _SHARE.get()
    keyed = by_image_id(predictions, references, images)
    if keyed is not None:  # pycocoevalcap's dicts, COCO's results list: matched by image id
        predictions, references, images = keyed.predictions, keyed.references, keyed.images
        if keyed.unscored and (share is None or share.is_main):
            warn_at_caller(f"{len(keyed.unscored)} reference image(s) have no prediction and take no part in the "
                           f"scores, e.g. {keyed.unscored[:3]!r}", UnscoredReferencesWarning)
    preds, refs = normalize_inputs(predictions, references, empty=empty)
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be True, False or None, got {type(progress).__name__} ({progress!r}).")
    max_chars = check_max_caption_chars(max_caption_chars)
    routed = split_options(selected, options)
    needing = _image_metrics(selected)
    alternative, image_free = _without_images(needing) if needing and images is None else (None, ())
    imgs = check_images(images, len(preds), needing, alternative, image_free)
    batch = CaptionBatch(preds, refs, cleanup=cleanup, tokenizer=tokenizer, progress=progress, images=imgs)
    batch.metric_names = tuple(selected)  # what every metric of this call reads (one warning per call, not per metric)
    limited = [name for name in selected if metric_class(name).limits_length]
    if limited and max_chars is not None:
        check_caption_lengths(preds, refs, max_chars, limited)

    if not isinstance(language_check, bool):
        raise TypeError(f"language_check must be True or False, got {type(language_check).__name__} "
                        f"({language_check!r:.60}).")
    empties = warn_empty(preds)
    if share is None or share.is_main:
        warn_lone_surrogates(preds, refs)
    if language_check and (share is None or share.is_main):
        from capeval.language import warn_non_english

        warn_non_english(preds, refs)
    instances = []  # constructed first: every option is checked before anything is computed
    try:
        for name in selected:
            instances.append(metric_class(name)(**routed[name]))
        batch.metrics = dict(zip(selected, instances))  # a composite metric reads the call's own parts
        if share is not None:
            for metric in instances:  # the per-item heavy work, split over the processes and gathered
                metric.use_prepared(share(metric, batch))
            if not share.is_main:
                return None
        result, per_caption, extras, fields = _run_metrics(instances, selected, batch, empties, progress)
    finally:
        for metric in instances:
            metric.close()
    uses_tokens = any(m.uses_tokens for m in instances)
    reads_text = any(m.reads_text for m in instances)

    # the clean-up is recorded only when a metric read the cleaned text: tokens never see it
    common = {"nrefs": nrefs_field(refs), "clean": batch.cleanup if reads_text else "none"}
    if uses_tokens:
        common["tok"] = batch.tokenizer.name
    result["per_caption"] = per_caption
    if keyed is not None:
        result["image_ids"] = list(keyed.ids)
    result.update(extras)
    result["signature"] = build_signature(common, fields)
    return result


def score_shared(predictions: Sequence[str], references: Sequence[str | Sequence[str]],
                 metrics: Sequence[str] | str | None = None, *, share, **kwargs: Any) -> dict[str, Any] | None:
    """:func:`score` with each metric's per-item heavy work handed to ``share`` (what :mod:`capeval.parallel` uses).

    ``share(metric, batch)`` returns the metric's :meth:`~capeval.metric.CaptionMetric.prepare` entries for the
    whole batch (or ``None``) and has ``is_main``; only the main process computes the metrics and returns the
    result, the others return ``None`` once their share is gathered.
    """
    token = _SHARE.set(share)
    try:
        return score(predictions, references, metrics, **kwargs)
    finally:
        _SHARE.reset(token)


def score_with_states(predictions: Sequence[str], references: Sequence[str | Sequence[str]],
                      metrics: Sequence[str] | str | None = None, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`score`'s result and, per metric, ``{"state": its MetricOutput.state (None for a metric whose corpus value
    is the mean of its per-caption values), "coverage": [known, total] tokens or None}``: what
    :func:`capeval.score_dataset` merges over chunks."""
    states: dict[str, Any] = {}
    token = _STATES.set(states)
    try:
        return score(predictions, references, metrics, **kwargs), states
    finally:
        _STATES.reset(token)
