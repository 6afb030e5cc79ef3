"""What a Space visitor types, parsed and scored without gradio: the callbacks of ``metrics/<name>/app.py``.

Caption metrics (``coco_caption``, ``spice``, ``spice_u``, ``sentence_cosine``): one predicted caption per line; per
caption one line of references, several separated by ``|``. THumB: one caption per line, ``precision, recall[,
fluency, conciseness, inclusive[, system]]``. Image metrics (``learned_critic``): the caption apps' two text boxes
plus uploaded images, the k-th image belonging to the k-th caption line (one image alone serves every line; none at
all is fine for metrics that read no image, ``critic_ref``). LCEval (``lceval``): the caption apps' two text boxes,
both scores and a third table with the 16 features of each caption. The callbacks (:func:`score_captions`,
:func:`score_thumb`, :func:`score_image_captions`, :func:`score_lceval`) are plain functions that raise
:class:`SpaceInputError` naming the bad line or image; :mod:`capeval.hf.space` builds the gradio apps around them.

The learned_critic Space reads its critic folders from the environment when they are set (else the shipped
critics): ``CAPEVAL_CRITIC_MODEL`` (image + reference), ``CAPEVAL_CRITIC_REF_MODEL`` (reference only),
``CAPEVAL_CRITIC_IMG_MODEL`` (image only) and ``CAPEVAL_CRITIC_PLUS_MODEL`` (a critic_plus combiner)
(:data:`CRITIC_MODEL_ENV`, :func:`critic_models`). The lceval Space reads ``CAPEVAL_LCEVAL_MODEL`` and
``CAPEVAL_LCEVAL_RELEASED_MODEL`` the same way (:data:`LCEVAL_MODEL_ENV`, :func:`lceval_models`).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from capeval.registry import metric_class, resolve

__all__ = ["CAPTION_EXAMPLE", "CRITIC_DEFAULT_METRICS", "CRITIC_EXAMPLE", "CRITIC_METRICS", "CRITIC_MODEL_ENV",
           "DIGITS", "LCEVAL_EXAMPLE", "LCEVAL_FEATURE_COLUMNS", "LCEVAL_METRICS", "LCEVAL_MODEL_ENV",
           "REFERENCE_SEPARATOR", "SpaceInputError", "THUMB_EXAMPLE", "THUMB_FIELDS", "critic_models", "image_paths",
           "lceval_models", "parse_predictions", "parse_references", "score_captions", "score_image_captions",
           "score_lceval", "score_thumb"]


#: Decimals shown in the tables.
DIGITS = 4


REFERENCE_SEPARATOR = "|"


class SpaceInputError(ValueError):
    """Input a person typed that cannot be scored; the message names the line and says what to type."""


def _lines(text: str) -> list[str]:
    """Non-blank lines, stripped (blank lines around the text are ignored, not counted)."""
    return [line.strip() for line in (text or "").strip().splitlines()]


def parse_predictions(text: str) -> list[str]:
    """One caption per line."""
    lines = _lines(text)
    if not lines or lines == [""]:
        raise SpaceInputError("Predictions: type one caption per line.")
    for i, line in enumerate(lines, 1):
        if not line:
            raise SpaceInputError(f"Predictions line {i} is empty: type one caption per line, no blank lines.")
    return lines


def parse_references(text: str, n: int) -> list[list[str]]:
    """Per caption one line, its references separated by ``|``; exactly ``n`` lines."""
    lines = _lines(text)
    if not lines or lines == [""]:
        raise SpaceInputError(f"References: type one line per caption ({n} line(s)); separate several references "
                              f"of one caption with {REFERENCE_SEPARATOR}.")
    if len(lines) != n:
        raise SpaceInputError(f"{n} caption(s) but {len(lines)} line(s) of references: give one line per caption, "
                              f"several references on one line separated by {REFERENCE_SEPARATOR}.")
    out = []
    for i, line in enumerate(lines, 1):
        refs = [r.strip() for r in line.split(REFERENCE_SEPARATOR)]
        for k, ref in enumerate(refs, 1):
            if not ref:
                raise SpaceInputError(f"References line {i}: reference {k} is empty (check the "
                                      f"{REFERENCE_SEPARATOR} separators).")
        out.append(refs)
    return out


def _round(value: float) -> float:
    return round(float(value), DIGITS)


def score_captions(compute: Callable[..., dict], keys: Sequence[str], predictions_text: str, references_text: str,
                   metrics: Sequence[str] | None = None,
                   options: Mapping[str, Any] | None = None) -> tuple[list[list[Any]], dict[str, list], str]:
    """``(corpus rows [key, score], per-caption table, signature)``.

    The per-caption table is ``{"headers": ["#", "caption", key...], "data": [[1, caption, score...], ...]}``
    (what ``gr.Dataframe`` shows), with the keys the chosen metrics returned.

    ``compute``: the evaluate module's ``compute``; ``keys``: the result keys shown; ``metrics``: what to pass
    as ``metrics=`` (``None``: the module's default); ``options``: more keywords for ``compute`` (model folders).
    Errors of the module (``ValueError``/``TypeError`` naming ``predictions[i]`` ..., a missing model or data
    file) come back as :class:`SpaceInputError` with the same message.
    """
    _, result, corpus, per_caption = _score_tables(compute, keys, predictions_text, references_text, metrics, options,
                                                   errors=(ValueError, TypeError, OSError))
    return corpus, per_caption, result.get("signature", "")


def coverage_rows(result: Mapping[str, Any]) -> list[list[Any]]:
    """Corpus-table rows ``["<metric> vocabulary coverage", share]`` for the learned metrics that report one (the
    share of the prediction tokens they read that their vocabulary knows, ``None`` without one;
    :mod:`capeval.coverage`)."""
    return [[f"{name} vocabulary coverage", None if share is None else _round(share)]
            for name, share in (result.get("coverage") or {}).items()]


def _score_tables(compute: Callable[..., dict], keys: Sequence[str], predictions_text: str, references_text: str,
                  metrics: Sequence[str] | None, options: Mapping[str, Any] | None = None,
                  errors: tuple[type[Exception], ...] = (ValueError, TypeError)):
    """``(predictions, result, corpus rows, per-caption table)`` of typed captions (:func:`score_captions`);
    ``options``: more keywords for ``compute``; ``errors``: the module's exceptions shown as a
    :class:`SpaceInputError`."""
    predictions = parse_predictions(predictions_text)
    references = parse_references(references_text, len(predictions))
    kwargs = dict(options or {})
    if metrics is not None:
        if not metrics:
            raise SpaceInputError("Choose at least one metric.")
        kwargs["metrics"] = list(metrics)
    try:
        result = compute(predictions=predictions, references=references, **kwargs)
    except errors as err:
        raise SpaceInputError(str(err)) from err
    shown = [k for k in keys if k in result]
    corpus = [[k, _round(result[k])] for k in shown] + coverage_rows(result)
    per_caption = {"headers": ["#", "caption", *shown],
                   "data": [[i + 1, p, *(_round(result["per_caption"][k][i]) for k in shown)]
                            for i, p in enumerate(predictions)]}
    return predictions, result, corpus, per_caption


THUMB_FIELDS = ("precision", "recall", "fluency", "conciseness", "inclusive")


def _thumb_rows(text: str) -> dict[str, list]:
    lines = _lines(text)
    if not lines or lines == [""]:
        raise SpaceInputError("Type one caption per line: precision, recall[, fluency, conciseness, inclusive[, system]].")
    if lines[0].lower().replace(" ", "").startswith("precision,"):
        lines = lines[1:]  # a header row
    columns: dict[str, list] = {k: [] for k in (*THUMB_FIELDS, "systems")}
    for i, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) not in (2, 5, 6):
            raise SpaceInputError(f"Line {i} has {len(cells)} value(s): give precision, recall (2), plus fluency, "
                                  "conciseness, inclusive (5), plus a system name (6).")
        numbers = []
        for name, cell in zip(THUMB_FIELDS, cells[:5]):
            try:
                numbers.append(float(cell))
            except ValueError:
                raise SpaceInputError(f"Line {i}: {name} {cell!r} is not a number.") from None
        numbers += [0.0] * (5 - len(numbers))
        for name, value in zip(THUMB_FIELDS, numbers):
            columns[name].append(value)
        columns["systems"].append(cells[5] if len(cells) == 6 else None)
    if any(s is None for s in columns["systems"]):
        if any(s is not None for s in columns["systems"]):
            raise SpaceInputError("Give a system name on every line or on none.")
        columns["systems"] = None
    return columns


def score_thumb(compute: Callable[..., dict], text: str,
                bootstrap_samples: int = 0) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]], str]:
    """``(corpus rows, per-caption rows [#, P, R, total], per-system rows, signature)`` of THumB rows."""
    columns = _thumb_rows(text)
    try:
        result = compute(**columns, bootstrap_samples=int(bootstrap_samples))
    except (ValueError, TypeError) as err:
        raise SpaceInputError(str(err)) from err
    corpus = [["total", _round(result["total"])]]
    if result.get("total_ci"):
        corpus.append(["total CI low", _round(result["total_ci"][0])])
        corpus.append(["total CI high", _round(result["total_ci"][1])])
    per_caption = [[i + 1, columns["precision"][i], columns["recall"][i], _round(t)]
                   for i, t in enumerate(result["per_caption"]["total"])]
    systems = [[name, s["n"], _round(s["precision"]), _round(s["recall"]), _round(s["total"])]
               for name, s in (result.get("systems") or {}).items()]
    return corpus, per_caption, systems, result.get("signature", "")


def image_paths(value: Any) -> list[str]:
    """The file paths held by an image upload component (``gr.Gallery`` / ``gr.File``), in upload order.

    Accepts ``None`` (nothing uploaded), a path, or a list of paths, ``(path, caption)`` pairs (a gallery),
    ``{"path": ...}`` / ``{"name": ...}`` dicts or objects with a ``path`` / ``name`` attribute (uploaded files).
    """
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    out = []
    for i, item in enumerate(value, 1):
        if isinstance(item, (tuple, list)):
            item = item[0] if item else None
        if isinstance(item, dict):
            item = item.get("path") or item.get("name")
        elif item is not None and not isinstance(item, (str, os.PathLike)):
            item = getattr(item, "path", None) or getattr(item, "name", None)
        if not item:
            raise SpaceInputError(f"Image {i} has no file: upload it again.")
        out.append(os.fspath(item))
    return out


def _image_metrics(metrics: Sequence[str]) -> list[str]:
    """The metric families among ``metrics`` that read images."""
    try:
        selected = resolve(list(metrics))
    except (ValueError, TypeError) as err:
        raise SpaceInputError(str(err)) from err
    return [name for name in selected if getattr(metric_class(name), "needs_images", False)]


def _named_for_the_page(err: BaseException, paths: Sequence[str] | None) -> str:
    """A module's error as the page says it: an :class:`~capeval.models.images.ImageInputError` about image ``k``
    names it ``Image k+1 (file name)`` from its fields; other messages by :func:`_name_images`."""
    from capeval.models.images import ImageInputError

    if isinstance(err, ImageInputError) and paths and 0 <= err.index < len(paths):
        return err.named(f"Image {err.index + 1} ({os.path.basename(paths[err.index])})")
    return _name_images(str(err), paths)


def _name_images(message: str, paths: Sequence[str] | None) -> str:
    """``images[k]`` in a module's message as the page numbers them: ``image k+1 (file name)``."""
    def label(match: re.Match) -> str:
        k = int(match.group(1))
        name = f" ({os.path.basename(paths[k])})" if paths and k < len(paths) else ""
        return f"image {k + 1}{name}"

    message = re.sub(r"images\[(\d+)\](?: \([^()]*\))?", label, message)  # with the path the message may add
    message = re.sub(r" <_io\.\w+ object at 0x[0-9a-f]+>", "", message)  # Pillow's name of the in-memory file
    return message[:1].upper() + message[1:]


def score_image_captions(compute: Callable[..., dict], keys: Sequence[str], images: Any, predictions_text: str,
                         references_text: str, metrics: Sequence[str] | None = None,
                         options: Mapping[str, Any] | None = None) -> tuple[list[list[Any]], dict[str, list], str]:
    """``(corpus rows [key, score], per-caption table, signature)`` of captions of uploaded images.

    ``images``: what the upload component holds (:func:`image_paths`): one image per caption line, in order, or a
    single image for every line, or none (metrics that read no image, e.g. ``critic_ref``). The per-caption table
    is ``{"headers": ["#", "image", "caption", key...], "data": [[1, file name, caption, score...], ...]}``.
    ``compute``: the evaluate module's ``compute``; ``metrics``: what to pass as ``metrics=`` (``None``: the
    module's default); ``options``: more keywords for ``compute`` (the critic folders). The module's errors
    (``ValueError``, ``TypeError``, a missing file) come back as :class:`SpaceInputError`, ``images[k]`` named as
    ``image k+1 (file name)``.
    """
    predictions = parse_predictions(predictions_text)
    n = len(predictions)
    references = parse_references(references_text, n)
    paths = image_paths(images)
    kwargs = dict(options or {})
    needing: list[str] = []
    if metrics is not None:
        if not metrics:
            raise SpaceInputError("Choose at least one metric.")
        kwargs["metrics"] = list(metrics)
        needing = _image_metrics(metrics)
    if not paths:
        if needing:
            verb = "reads" if len(needing) == 1 else "read"
            # the critic Space offers critic_ref; the CLIP / PAC-S Spaces have no image-free choice
            instead = {metric_class(n).without_images for n in needing}
            alternative = (f", or choose only {instead.pop()}, which reads none"
                           if len(instead) == 1 and None not in instead else "")
            raise SpaceInputError(f"{', '.join(needing)} {verb} the image: upload one image per caption line (in the "
                                  f"order of the lines){alternative}.")
        given = None
    elif len(paths) == 1:
        given = paths * n
    elif len(paths) == n:
        given = paths
    else:
        raise SpaceInputError(f"{n} caption(s) but {len(paths)} image(s): upload one image per caption line, in the "
                              "order of the lines (or a single image for all of them).")
    try:
        result = compute(predictions=predictions, references=references, images=given, **kwargs)
    except (ValueError, TypeError, OSError) as err:
        raise SpaceInputError(_named_for_the_page(err, given)) from err
    shown = [k for k in keys if k in result]
    corpus = [[k, _round(result[k])] for k in shown] + coverage_rows(result)
    per_caption = {"headers": ["#", "image", "caption", *shown],
                   "data": [[i + 1, os.path.basename(given[i]) if given else "", p,
                             *(_round(result["per_caption"][k][i]) for k in shown)]
                            for i, p in enumerate(predictions)]}
    return corpus, per_caption, result.get("signature", "")


# -- the apps of metrics/<name>/app.py ------------------------------------------------------------------------
#: What the Example button fills in: three captions, one with one reference, two with several.
CAPTION_EXAMPLE = (
    "a dog runs across the grass\na man rides a red bike down the street\ntwo cats sleep on a sofa",
    "a brown dog running on a lawn | a dog plays in the grass\n"
    "a man riding a bicycle on a road | a cyclist in the city | a person on a red bike\n"
    "two cats lying on a couch",
)


THUMB_EXAMPLE = """precision, recall, fluency, conciseness, inclusive, system
5, 5, 0, 0, 0, human
4, 3, -0.1, 0, 0, model
5, 4, 0, 0, 0, human
3, 3, 0, -0.2, 0, model"""


#: The critic metrics the learned_critic Space offers (all ticked at first).
CRITIC_METRICS = ("critic", "critic_ref", "critic_img", "critic_plus")


#: The ones ticked at first (critic_plus also loads the MiniLM sentence encoder).
CRITIC_DEFAULT_METRICS = CRITIC_METRICS[:3]


#: Option of the learned_critic module -> the environment variable the Space reads it from (a critic folder).
CRITIC_MODEL_ENV = {"critic_model": "CAPEVAL_CRITIC_MODEL", "critic_ref_model": "CAPEVAL_CRITIC_REF_MODEL",
                    "critic_img_model": "CAPEVAL_CRITIC_IMG_MODEL", "critic_plus_model": "CAPEVAL_CRITIC_PLUS_MODEL"}


#: What the Example button fills in beside the bundled photos (:func:`capeval.io.example_images`: a cat, an
#: astronaut, a coffee cup). The third caption's words are permuted: a pathological caption of the kind the paper's
#: robustness tests use.
CRITIC_EXAMPLE = (
    "a tabby cat looking at the camera\na smiling woman astronaut in an orange suit\nof coffee cup a saucer on a",
    "a cat with grey stripes | a striped cat sitting and staring\n"
    "an astronaut in front of an american flag | a woman in a space suit smiles\n"
    "a cup of coffee on a saucer with a spoon | coffee in a white cup on a table",
)


def _model_options(variables: Mapping[str, str], what: str, models: Mapping[str, str | os.PathLike | None] | None,
                   environ: Mapping[str, str] | None) -> dict[str, str]:
    """Model folders by option name: ``models`` where given, else the environment variable ``variables[option]``,
    else nothing (the shipped model); ``what`` names the options in the error for an unknown one."""
    environ = os.environ if environ is None else environ
    models = dict(models or {})
    unknown = sorted(set(models) - set(variables))
    if unknown:
        raise ValueError(f"unknown {what} option(s) {unknown}; choose from {sorted(variables)}.")
    out = {}
    for option, variable in variables.items():
        value = models.get(option) or environ.get(variable)
        if value:
            out[option] = os.fspath(value)
    return out


def critic_models(models: Mapping[str, str | os.PathLike | None] | None = None,
                  environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The critic folders the learned_critic Space passes to ``compute``: ``models`` where given, else the
    environment (:data:`CRITIC_MODEL_ENV`), else nothing (the shipped critics)."""
    return _model_options(CRITIC_MODEL_ENV, "critic", models, environ)


# -- LCEval: typed captions in, both scores and the 16 features of each caption out ---------------------------------
#: The LCEval metrics the lceval Space offers (both ticked at first).
LCEVAL_METRICS = ("lceval", "lceval_released")


#: Option of the lceval module -> the environment variable the Space reads it from (a network folder).
LCEVAL_MODEL_ENV = {"lceval_model": "CAPEVAL_LCEVAL_MODEL", "lceval_released_model": "CAPEVAL_LCEVAL_RELEASED_MODEL"}


#: What the Example button fills in: the caption Spaces' three captions and their references.
LCEVAL_EXAMPLE = CAPTION_EXAMPLE


#: The first columns of the features table (then the 16 features, :data:`capeval.lceval.FEATURE_NAMES`).
LCEVAL_FEATURE_COLUMNS = ("#", "caption", "features of")


def _feature_table(result: Mapping[str, Any], keys: Sequence[str], predictions: Sequence[str]) -> dict[str, list]:
    """Per caption one row of its 16 features; one row per metric when the metrics' features differ (other word
    vectors or parser), else one row naming both (``"lceval, lceval_released"``)."""
    from capeval.lceval import FEATURE_NAMES

    groups: list[tuple[list[str], list[dict]]] = []  # metrics sharing the same feature rows
    for key in keys:
        rows = result.get(f"{key}_features")
        if rows is None:
            continue
        for names, other in groups:
            if other == rows:
                names.append(key)
                break
        else:
            groups.append(([key], rows))
    return {"headers": [*LCEVAL_FEATURE_COLUMNS, *FEATURE_NAMES],
            "data": [[i + 1, p, ", ".join(names), *(_round(rows[i][f]) for f in FEATURE_NAMES)]
                     for i, p in enumerate(predictions) for names, rows in groups]}


def score_lceval(compute: Callable[..., dict], predictions_text: str, references_text: str,
                 metrics: Sequence[str] | None = None, options: Mapping[str, Any] | None = None
                 ) -> tuple[list[list[Any]], dict[str, list], dict[str, list], str]:
    """``(corpus rows [key, score], per-caption table, features table, signature)`` of typed captions.

    The per-caption table is ``{"headers": ["#", "caption", key...], "data": [[1, caption, score...], ...]}``; the
    features table ``{"headers": ["#", "caption", "features of", "p1", ..., "hwcm_dep3"], "data": [...]}``
    (:func:`_feature_table`). ``compute``: the lceval module's ``compute``; ``metrics``: what to pass as
    ``metrics=`` (``None``: the module's default, ``lceval``); ``options``: more keywords for ``compute`` (the
    network folders). The module's errors (``ValueError``, ``TypeError``, a missing network folder) come back as
    :class:`SpaceInputError` with the same message.
    """
    predictions, result, corpus, per_caption = _score_tables(
        compute, LCEVAL_METRICS, predictions_text, references_text, metrics,
        options={**dict(options or {}), "lceval_features": True, "lceval_released_features": True},
        errors=(ValueError, TypeError, OSError))
    shown = [row[0] for row in corpus]
    return corpus, per_caption, _feature_table(result, shown, predictions), result.get("signature", "")


def lceval_models(models: Mapping[str, str | os.PathLike | None] | None = None,
                  environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The network folders the lceval Space passes to ``compute``: ``models`` where given, else the environment
    (:data:`LCEVAL_MODEL_ENV`), else nothing (the shipped networks)."""
    return _model_options(LCEVAL_MODEL_ENV, "lceval", models, environ)
