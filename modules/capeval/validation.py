"""Input validation shared by every capeval metric.

Errors are ``ValueError`` (or ``TypeError`` for wrong container types) whose message names the
offending index and what to do about it, in the spirit of torchmetrics.
"""
from __future__ import annotations

import math
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from capeval.advice import OPTION, Fix, Words, words

#: Default of ``max_caption_chars``: the longest caption (in characters) that METEOR, SPICE and SPICE-U
#: accept. 4.5 times the longest caption of any benchmark capeval reads (1,102 characters, PASCAL-50S;
#: COCO's longest is 250); SPICE parses a 5,000-character caption in about 0.3 s, but time grows
#: quadratically (100,000 characters: 45 s) and the METEOR jar's 2 GB JVM (``meteor_backend="java"``) runs out of
#: memory long before that.
DEFAULT_MAX_CAPTION_CHARS = 5000


#: Values of the ``empty`` option: what an empty or whitespace-only *prediction* does.
EMPTY_CHOICES = ("error", "zero")


class WordlessCaptionWarning(UserWarning):
    """A caption has no word token after PTB tokenisation (only punctuation, emoji, zero-width characters...)."""


class LoneSurrogateWarning(UserWarning):
    """A caption holds a lone surrogate (a code point U+D800..U+DFFF without its pair, e.g. JSON's ``"\\ud800"``):
    half of a UTF-16 pair, not a character. The PTB tokenizer drops it, as pycocoevalcap's Java tokenizer does."""


class UnscoredReferencesWarning(UserWarning):
    """References keyed by image id include images that have no prediction: they take no part in the scores."""


class EmptyCaptionWarning(UserWarning):
    """A prediction is empty or whitespace only and ``empty="zero"`` scored it 0 on every metric."""


class OptionError(ValueError):
    """A ``ValueError`` whose fix is one keyword argument of :func:`capeval.score` (``images=``,
    ``max_caption_chars``), carried as data: ``words`` (:class:`capeval.advice.Words`: the message's parts, which the
    command line says with its flags), ``option`` (the keyword), ``item`` and ``index`` (the input entry it is about,
    e.g. ``"predictions"`` and ``3``, or ``None``). ``str()`` is the message in the API's words."""

    def __init__(self, message: Words | str, cli: str | None = None) -> None:
        said = message if isinstance(message, Words) else None
        super().__init__(said.api() if said is not None else message)
        self.words = said
        self.option = said.option if said is not None else None
        self.item = said.item if said is not None else None
        self.index = said.index if said is not None else None
        self._cli = cli

    @property
    def cli(self) -> str:
        """Deprecated: the message given as ``cli=``, else the message; the command line says the error from its
        fields (``capeval.cli.metric_flags.cli_words(err)``)."""
        warnings.warn("OptionError.cli is deprecated: the command line says the error from its fields "
                      "(capeval.cli.metric_flags.cli_words(err)).", DeprecationWarning, stacklevel=2)
        return str(self) if self._cli is None else self._cli


class ImageInputError(ValueError):
    """An image input that cannot be used, with what it is as data: ``index`` (its position in ``images``), ``path``
    (its file, or ``None``) and ``problem`` (what is wrong, the words after the item's name: ``" is not a readable
    image (...)"``), so that a caller names the item in its own words (:meth:`named`: score-dataset's row and column,
    a Space's "Image 2 (cat.png)") without reading the message back."""

    def __init__(self, index: int, path: str | os.PathLike | None, problem: str) -> None:
        self.index, self.path, self.problem = index, None if path is None else os.fspath(path), problem
        super().__init__(self.named(f"images[{index}]" + (f" ({self.path})" if self.path is not None else "")))

    def named(self, item: str) -> str:
        """The message with the item called ``item``."""
        return f"{item}{self.problem}"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_at_caller(message: str | Warning, category: type[Warning] | None = None) -> None:
    """``warnings.warn`` pointing at the first line outside capeval (the line that called :func:`capeval.score`,
    ...), so that the printed location and the user's warning filters name the user's own code. ``message``: text
    (of ``category``) or a warning instance (:func:`capeval.advice.with_words`), its own category."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_caption(value: Any, where: str) -> str:
    """Return ``value`` if it is a usable caption string, else raise naming ``where``."""
    if value is None:
        raise ValueError(f"{where} is None; every caption must be a non-empty string.")
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"{where} is NaN (a missing value?); every caption must be a non-empty string.")
    if not isinstance(value, str):
        raise ValueError(f"{where} is a {type(value).__name__} ({_describe(value)}), not a string.")
    if not value.strip():
        raise ValueError(f"{where} is empty or whitespace only; captions must contain at least one word.")
    return value


def check_empty_option(empty: Any) -> str:
    """Validate the ``empty`` argument (one of :data:`EMPTY_CHOICES`)."""
    if not isinstance(empty, str) or empty not in EMPTY_CHOICES:
        raise ValueError(f"empty must be one of {list(EMPTY_CHOICES)}, got {_describe(empty)}.")
    return empty


def check_prediction(value: Any, where: str, empty: str = "error") -> str:
    """Like :func:`check_caption`; with ``empty="zero"`` an empty or whitespace-only string becomes ``""``."""
    if isinstance(value, str) and not value.strip():
        if empty == "zero":
            return ""
        raise ValueError(
            f"{where} is empty or whitespace only; captions must contain at least one word "
            "(pass empty=\"zero\" to score empty predictions 0 with a warning)."
        )
    return check_caption(value, where)


_STR_TYPE = {str}


def normalize_references(references: Sequence[str | Sequence[str]]) -> list[list[str]]:
    """Validate ``references`` (per item one string or a non-empty list of strings) as ``list[list[str]]``."""
    if isinstance(references, str):
        raise TypeError("references must be a list (one entry per prediction), got a single string.")
    try:
        references = list(references)
    except TypeError as err:
        raise TypeError(f"references must be a sequence: {err}") from None
    refs: list[list[str]] = []
    for i, entry in enumerate(references):
        # the common case, checked without building an error label per caption (the labels cost more than the check)
        if type(entry) is list and entry and set(map(type, entry)) == _STR_TYPE and all(map(str.strip, entry)):
            refs.append(list(entry))
            continue
        if type(entry) is str and entry and not entry.isspace():
            refs.append([entry])
            continue
        if isinstance(entry, str) or entry is None or (isinstance(entry, float) and math.isnan(entry)):
            refs.append([check_caption(entry, f"references[{i}]")])
            continue
        if not isinstance(entry, Sequence):
            raise ValueError(
                f"references[{i}] is a {type(entry).__name__} ({_describe(entry)}); "
                "expected a string or a list of strings."
            )
        if len(entry) == 0:
            raise ValueError(f"references[{i}] is an empty list; every prediction needs at least one reference.")
        refs.append([check_caption(r, f"references[{i}][{j}]") for j, r in enumerate(entry)])
    return refs


def check_lengths(n_predictions: int, n_references: int) -> None:
    """``ValueError`` unless there are as many reference entries as predictions (counts)."""
    if n_predictions != n_references:
        raise ValueError(
            f"Length mismatch: {n_predictions} predictions but {n_references} reference entries; "
            "give exactly one reference string or list of reference strings per prediction."
        )


def normalize_inputs(
    predictions: Sequence[str], references: Sequence[str | Sequence[str]], empty: str = "error"
) -> tuple[list[str], list[list[str]]]:
    """Validate ``predictions`` and ``references`` and return them as ``list[str]``, ``list[list[str]]``.

    ``references[i]`` may be one string or a non-empty list of strings for prediction ``i``. An empty or
    whitespace-only prediction raises ``ValueError`` naming it, or with ``empty="zero"`` is returned as ``""``
    (a caption without words, which every metric scores 0; see :func:`warn_empty`).
    """
    empty = check_empty_option(empty)
    if isinstance(predictions, str):
        raise TypeError("predictions must be a list of strings, got a single string; wrap it in a list.")
    if isinstance(references, str):
        raise TypeError("references must be a list (one entry per prediction), got a single string.")
    try:
        predictions = list(predictions)
        references = list(references)
    except TypeError as err:
        raise TypeError(f"predictions and references must be sequences: {err}") from None
    check_lengths(len(predictions), len(references))
    if not predictions:
        raise ValueError("No predictions given: predictions and references are empty.")
    preds = [p if type(p) is str and p and not p.isspace() else check_prediction(p, f"predictions[{i}]", empty)
             for i, p in enumerate(predictions)]
    return preds, normalize_references(references)


#: What ``images=`` entries may be, for the error messages (the rules are :mod:`capeval.models.images`').
IMAGE_KINDS = ("a path (str or os.PathLike), encoded bytes, a datasets.Image value (a dict with 'bytes' and/or "
               "'path'), a PIL.Image.Image, a numpy array or a torch tensor")


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_in_memory_image(value: Any) -> bool:
    """A ``PIL.Image.Image`` or a numpy array, found without importing PIL or numpy (if the caller made one,
    its module is loaded)."""
    pil = sys.modules.get("PIL.Image")
    np = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    return bool((pil is not None and isinstance(value, pil.Image))
                or (np is not None and isinstance(value, np.ndarray))
                or (torch is not None and isinstance(value, torch.Tensor)))


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return f" of shape {tuple(shape)}" if shape is not None else ""


def _path_problem(value: Any) -> str | None:
    path = os.fspath(value)
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    return None if path.strip() else " is an empty path; give the image file's path."


def image_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as an image entry, in the words after the entry's name (``" is an empty path;
    ..."``), or ``None`` when it is one of :data:`IMAGE_KINDS` (see :func:`check_image`)."""
    if isinstance(value, (str, os.PathLike)):
        return _path_problem(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return None if len(value) else " is empty bytes; give the encoded image file's bytes."
    if isinstance(value, dict):
        for key in ("bytes", "path"):
            if value.get(key) is not None:
                inner = image_problem(value[key])
                return None if inner is None else f"[{key!r}]{inner}"
        return (f" is a dict without 'bytes' or 'path' ({_describe(value)}); a datasets.Image value has at least one "
                "of them.")
    if not _is_in_memory_image(value):
        return f" is a {type(value).__name__} ({_describe(value)}), not an image; pass {IMAGE_KINDS}."
    return None


def check_image(value: Any, where: str) -> None:
    """Raise naming ``where`` unless ``value`` is one of :data:`IMAGE_KINDS` (a non-missing entry).

    The type only, cheaply: whether a file exists and decodes, and an array's shape and dtype, are checked
    when a metric reads the entry (:func:`capeval.models.images.read_item`, the same accepted kinds).
    """
    problem = image_problem(value)
    if problem is not None:
        raise ValueError(f"{where}{problem}")


def check_images(
    images: Sequence[Any] | None, n_predictions: int, needing: Sequence[str] = (), alternative: str | None = None,
    image_free: Sequence[str] = (),
) -> list[Any] | None:
    """Validate the ``images`` argument of :func:`capeval.score`: ``None`` or one entry per prediction.

    ``needing``: the selected metrics that read images (``needs_images``). For them ``images`` must be given
    and no entry may be ``None`` (or NaN); with none of them, ``None`` entries are accepted (the images are
    ignored) but the length and the other entries are still checked. ``alternative`` names a metric that
    needs no image, for the error when ``images`` is missing; ``image_free`` every metric that needs none, listed
    there too. Entries: see :func:`check_image`.
    Returns ``images`` as a list (or ``None``). Never imports PIL, numpy or torch.
    """
    names = ", ".join(needing)
    verb = "needs" if len(needing) == 1 else "need"
    if images is None:
        if needing:
            hint = f", or use {alternative}, which needs no image" if alternative and alternative not in needing else ""
            if image_free:
                hint += f" (metrics that need no image: {', '.join(image_free)})"
            raise OptionError(words("images", f"{names} {verb} one image per prediction: ",
                                    Fix("pass images= (one per prediction, in prediction order)"), f"{hint}."))
        return None
    if isinstance(images, (str, bytes, os.PathLike, dict)) or (
            _is_in_memory_image(images) and getattr(images, "ndim", 0) != 4):
        raise TypeError(f"images must be a list (one image per prediction) or an N×H×W×C array, got a single "
                        f"{type(images).__name__}{_shape(images)}; wrap it in a list.")
    try:
        images = list(images)
    except TypeError as err:
        raise TypeError(f"images must be a sequence (one image per prediction): {err}") from None
    if len(images) != n_predictions:
        raise ValueError(f"Length mismatch: {n_predictions} predictions but {len(images)} images; give exactly one "
                         "image per prediction, in prediction order.")
    for i, value in enumerate(images):  # ImageInputError: the entry's index as data
        if _is_missing(value):
            if needing:
                raise ImageInputError(i, None, f" is {value}; {names} {verb} an image for every prediction.")
            continue
        problem = image_problem(value)
        if problem is not None:
            raise ImageInputError(i, None, problem)
    return images


def check_max_caption_chars(value: Any) -> int | None:
    """Validate the ``max_caption_chars`` argument (a positive integer or ``None``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_caption_chars must be a positive integer or None (no limit), got {_describe(value)}.")
    return value


def check_caption_lengths(
    predictions: Sequence[str], references: Sequence[Sequence[str]], max_chars: int, metrics: Sequence[str]
) -> None:
    """Raise ``ValueError`` (:class:`OptionError`) naming the first caption longer than ``max_chars`` characters."""
    def fail(where: str, text: str, item: str, index: int) -> None:
        found = (f"{where} has {len(text):,} characters; {', '.join(metrics)} "
                 f"{'accepts' if len(metrics) == 1 else 'accept'} at most {max_chars:,}")
        raise OptionError(words("max_caption_chars", f"{found} (", OPTION, "; ",
                                Fix("pass a larger value, or None for no limit, if this caption is intended"), ").",
                                item=item, index=index))

    for i, p in enumerate(predictions):
        if len(p) > max_chars:
            fail(f"predictions[{i}]", p, "predictions", i)
    for i, refs in enumerate(references):
        for j, r in enumerate(refs):
            if len(r) > max_chars:
                fail(f"references[{i}][{j}]", r, "references", i)


def _items(where: list[str]) -> str:
    return ", ".join(where[:5]) + (f" and {len(where) - 5} more" if len(where) > 5 else "")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_items(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> list[str]:
    """``predictions[i]`` / ``references[i][j]`` of every caption holding a lone surrogate (U+D800..U+DFFF), in order.
    A Python ``str`` holds a pair only as two lone halves too, so every such code point counts."""
    search = _LONE_SURROGATE.search
    where = [f"predictions[{i}]" for i, p in enumerate(predictions) if search(p)]
    where += [f"references[{i}][{j}]" for i, refs in enumerate(references) for j, r in enumerate(refs) if search(r)]
    return where


def warn_lone_surrogates(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> list[str]:
    """One :class:`LoneSurrogateWarning` line naming the captions that hold a lone surrogate (the first five, then a
    count); returns them all. They are scored as pycocoevalcap scores them: the tokenizer drops the surrogate."""
    where = lone_surrogate_items(predictions, references)
    if where:
        warn_at_caller(
            f"{len(where)} caption(s) hold a lone surrogate (U+D800..U+DFFF, half of a UTF-16 pair, e.g. JSON's "
            f"\"\\ud800\" alone: not a character): {_items(where)}. The tokenizer drops it, as pycocoevalcap's "
            "does; the text was probably cut inside an emoji or decoded wrongly.",
            LoneSurrogateWarning,
        )
    return where


def warn_empty(predictions: Sequence[str]) -> list[int]:
    """Warn (:class:`EmptyCaptionWarning`) naming the predictions that ``empty="zero"`` turned into ``""``.

    Returns their indices. They are scored as captions without words: 0 on every metric.
    """
    empty = [i for i, p in enumerate(predictions) if p == ""]
    if empty:
        warn_at_caller(
            f"{len(empty)} empty prediction(s) scored 0 on every metric (empty=\"zero\"): "
            f"{_items([f'predictions[{i}]' for i in empty])}.",
            EmptyCaptionWarning,
        )
    return empty


def warn_wordless(
    prediction_tokens: Sequence[Sequence[str]],
    reference_tokens: Sequence[Sequence[Sequence[str]]],
    skip: Sequence[int] = (),
) -> None:
    """Warn (:class:`WordlessCaptionWarning`) naming captions whose token list is empty.

    They are scored as pycocoevalcap scores them: such a prediction gets 0 from every metric, such a
    reference matches nothing. Predictions listed in ``skip`` (empty ones, already warned about) are not named.
    """
    skipped = set(skip)
    where = [f"predictions[{i}]" for i, t in enumerate(prediction_tokens) if not t and i not in skipped]
    where += [f"references[{i}][{j}]" for i, refs in enumerate(reference_tokens) for j, t in enumerate(refs) if not t]
    if where:
        shown = _items(where)
        warn_at_caller(
            f"{len(where)} caption(s) have no word token (only punctuation, symbols or invisible characters): "
            f"{shown}. They are scored like pycocoevalcap scores them (a prediction without words scores 0).",
            WordlessCaptionWarning,
        )


def check_finite(values: Sequence[float], what: str) -> None:
    """Raise if any score is NaN or infinite (never return a silent NaN)."""
    for i, v in enumerate(values):
        if not math.isfinite(v):
            raise ValueError(f"{what}[{i}] is {v}; this is a capeval bug, please report it with the input.")
