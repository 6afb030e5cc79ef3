"""Shared pieces of capeval's Hugging Face ``evaluate`` module scripts (``metrics/<name>/<name>.py``).

* :func:`caption_features`: the input features of a caption metric.
* :class:`CaptionModule`: a mixin for the script's ``evaluate.Metric`` subclass. It makes the module take
  references exactly as :func:`capeval.score` does (one string or a list of strings per prediction, mixed
  freely) and lets ``evaluate.combine`` pass one set of options to every capeval module.
* :func:`select_metrics`: which of the ``metrics=`` a module computes itself.

``evaluate.combine([...]).compute(**kwargs)`` passes the same keyword arguments to every module, so:
``metrics=`` names metrics across all capeval modules (each module computes the ones it owns and returns
``{}`` when it owns none), and an option of another capeval module (``cider_df`` for the SPICE module,
``spice_workers`` for COCO Caption) is passed over; an option no capeval module knows raises ``ValueError``.
"""
from __future__ import annotations

import inspect
import warnings
from collections.abc import Sequence
from typing import Any

from capeval.api import option_names
from capeval.inputs import by_image_id
from capeval.registry import resolve, result_keys
from capeval.validation import check_prediction, normalize_references


def caption_features():
    """Input features of caption metrics: references as a list of strings per prediction, or one string.

    :class:`CaptionModule` turns single reference strings into one-item lists before ``evaluate`` sees them,
    so the list form is the one that is used; the string form stays for ``evaluate``'s Hub widget.
    """
    import datasets

    return [
        datasets.Features(
            {"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
        ),
        datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
    ]


def select_metrics(metrics: Sequence[str] | str | None, family: Sequence[str],
                   inside: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """The result keys among ``metrics`` that the metric families ``family`` produce.

    ``metrics`` takes every name :func:`capeval.score` takes (an unknown one raises ``ValueError``); ``None``
    selects all of ``family``. When ``metrics`` selects nothing of ``family`` (it names metrics of other modules
    of an ``evaluate.combine``), the list is empty and a ``UserWarning`` says that the module returns ``{}``.

    ``inside`` maps a metric family this module runs only as a part of one of its own to ``(that metric, the
    module that computes it)``, e.g. ``{"spice": ("spider", "capeval/spice")}``: when ``metrics`` selects nothing
    of ``family`` but names such a family, a one-line ``ValueError`` names the module to use instead of ``{}``.
    """
    if metrics is None:
        return [key for name in family for key in result_keys(name)]
    resolved = resolve(metrics)
    keys = [key for name, ks in resolved.items() if name in family for key in ks]
    if not keys:
        for name in resolved:
            if inside and name in inside:
                part_of, module = inside[name]
                raise ValueError(
                    f"metrics={metrics!r}: this module computes {name} only inside {part_of} "
                    f"(metrics={part_of!r}); for {name} itself use the {module} module "
                    f"(evaluate.load({module!r}), or evaluate.combine with it and a metric of this module)")
        own = [key for name in family for key in result_keys(name)]
        warnings.warn(
            f"metrics={metrics!r} selects none of this module's metrics ({', '.join(own)}); it computes nothing "
            "and returns {} (in evaluate.combine the other modules compute them).",
            UserWarning,
            stacklevel=3,
        )
    return keys


def _reference_lists(references: Any) -> Any:
    """Each reference entry as a list of strings (validated, naming the item), as ``capeval.score`` reads them."""
    return None if references is None else normalize_references(references)


#: How each option kind is typed in a module's keyword description.
_KIND_TYPES = {"str": "str", "int": "int", "float": "float", "bool": "bool", "path": "str", "model": "str",
               "device": "str", "any": "object"}
#: The line of a module's keyword description that the options of its metrics replace (:func:`with_options`).
OPTIONS_MARKER = "    {metric options}\n"


def option_arguments(families: Sequence[str], width: int = 112) -> str:
    """The ``Args:`` lines of the keyword options of the metric families ``families``, from their one declaration
    (:func:`capeval.metric_options`), each option once: ``    name (`type`, optional): help``, wrapped to ``width``
    with continuation lines indented by 8."""
    import textwrap

    from capeval.registry import metric_options

    lines, seen = [], set()
    for family in families:
        for option, declaration in metric_options(family).items():
            if option in seen:
                continue
            seen.add(option)
            text = " ".join(declaration.help.split()).rstrip(".")
            if "default" not in text.lower():
                text += f" (default {declaration.default!r})"
            if declaration.choices is not None:
                shown = ", ".join(repr(c) for c in declaration.choices)
                text = text if all(repr(c) in text or str(c) in text for c in declaration.choices) else \
                    f"{text}; one of {shown}"
            entry = f"{option} (`{_KIND_TYPES[declaration.kind]}`, optional): {text}."
            lines += textwrap.wrap(entry, width, initial_indent="    ", subsequent_indent="        ",
                                   break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines) + "\n"


def with_options(description: str, families: Sequence[str]) -> str:
    """``description`` (a module's ``_KWARGS_DESCRIPTION``) with its :data:`OPTIONS_MARKER` line replaced by the
    options of ``families`` (:func:`option_arguments`)."""
    if OPTIONS_MARKER not in description:
        raise ValueError("the keyword description has no '{metric options}' line")
    return description.replace(OPTIONS_MARKER, option_arguments(families), 1)


def takes_options(families: Sequence[str]):
    """Decorator of a module's ``_compute(self, predictions, references, ..., **options)``: its signature lists, as
    keyword arguments with their declared defaults, every option of the metric families ``families`` (each declared
    once, in the metric class), so ``inspect.signature`` shows explicit keywords, as evaluate's module checks require
    (no ``**kwargs``), and a keyword outside them is refused (:class:`CaptionModule`) without restating any."""
    def decorate(compute):
        import functools

        from capeval.registry import metric_options

        signature = inspect.signature(compute)
        kept = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        taken = {p.name for p in kept}
        added = {}
        for family in families:
            for option, declaration in metric_options(family).items():
                if option not in taken and option not in added:
                    added[option] = inspect.Parameter(option, inspect.Parameter.KEYWORD_ONLY,
                                                      default=declaration.default)
        if len(kept) == len(signature.parameters):
            raise TypeError(f"{compute.__qualname__} must take **options to take its metrics' options")

        @functools.wraps(compute)
        def wrapper(self, *args, **kwargs):
            return compute(self, *args, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=[*kept, *added.values()])
        return wrapper

    return decorate


class CaptionModule:
    """Mixin for an ``evaluate.Metric`` that wraps :func:`capeval.score` (``class X(CaptionModule, evaluate.Metric)``).

    * References: ``"one ref"`` and ``["a", "b"]`` may be mixed in one call, in any order (``evaluate`` would
      otherwise take the first entry's type for all and silently turn a list into its text, or a string into
      its characters).
    * Options: a keyword the script's ``_compute`` does not declare is passed over when another capeval module
      declares it (``evaluate.combine`` sends every option to every module), else ``ValueError`` names it.
    """

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Like ``evaluate.Metric.compute``, with mixed reference forms and combine-friendly options; predictions and
        references keyed by image id (pycocoevalcap's dicts, COCO's results list: :mod:`capeval.inputs`) are matched
        by id and ``result["image_ids"]`` names each per-caption entry's image; images given to :meth:`add_batch` /
        :meth:`add` are used when ``images`` is not given here."""
        keyed = None if predictions is None else by_image_id(predictions, references, kwargs.get("images"))
        if keyed is not None:
            predictions, references = keyed.predictions, keyed.references
            if kwargs.get("images") is not None:
                kwargs["images"] = keyed.images
        pending, self._pending_images = getattr(self, "_pending_images", None), None
        if pending is not None and kwargs.get("images") is None:
            if predictions is not None:
                raise ValueError(f"the {self.name} module holds images from add_batch() / add() but compute() got "
                                 "predictions of its own; give their images=, or add everything with add_batch().")
            kwargs["images"] = pending
        kwargs = self._own_options(kwargs)
        try:
            if self._nothing_added() and predictions is not None:
                result = self._compute_given(predictions, references, kwargs)
            else:  # evaluate.Metric.compute hands them to add_batch, which reads the reference forms
                result = super().compute(predictions=predictions, references=references, **kwargs)
        finally:
            self._added = 0  # predictions added since the last compute(), for naming an added one by its place
        if keyed is not None and isinstance(result, dict):
            result["image_ids"] = list(keyed.ids)
        return result

    def _nothing_added(self) -> bool:
        """Whether this is one process's module (``num_process == 1``) with nothing added since the last compute."""
        return (getattr(self, "num_process", 1) == 1 and getattr(self, "writer", None) is None
                and getattr(self, "buf_writer", None) is None)

    def _compute_given(self, predictions, references, kwargs: dict[str, Any]):
        """``compute(predictions=..., references=...)`` with nothing added before, in one process: the inputs go to
        ``_compute`` directly (as evaluate's ``compute`` hands them over after writing them to an Arrow table and
        reading them back, which changes nothing but costs a tenth of a second per 8,000 captions), under the
        module's seed as there."""
        from datasets.utils.py_utils import temp_seed

        names = list(self._feature_names())
        given = {"predictions": predictions, "references": references}
        if any(given.get(name) is None for name in names):  # an input evaluate itself would refuse, or another one
            return super().compute(predictions=predictions, references=references, **kwargs)
        inputs = {"predictions": list(predictions)}
        if "references" in names:
            inputs["references"] = _reference_lists(references)
        with temp_seed(self.seed):
            return self._compute(**inputs, **kwargs)

    def add_batch(self, *, predictions=None, references=None, images=None, **kwargs):
        """Like ``evaluate.Metric.add_batch``, with one reference string or a list per prediction, and ``images``
        (one per prediction) in the modules that read images, kept until :meth:`compute`."""
        keyed = None if predictions is None else by_image_id(predictions, references, images)
        if keyed is not None:
            predictions, references, images = keyed.predictions, keyed.references, keyed.images
        if images is not None:
            self._keep_images(list(images), len(predictions) if predictions is not None else None)
        added = super().add_batch(predictions=predictions, references=_reference_lists(references), **kwargs)
        if predictions is not None and not isinstance(predictions, str):
            self._added = getattr(self, "_added", 0) + len(predictions)
        return added

    def add(self, *, prediction=None, reference=None, image=None, **kwargs):
        """Like ``evaluate.Metric.add``, with one reference string or a list, and ``image`` in the modules that read
        images."""
        if not isinstance(prediction, str):  # named by its place among the added predictions, before evaluate's check
            check_prediction(prediction, f"predictions[{getattr(self, '_added', 0)}]", empty="zero")
        if reference is not None:
            (reference,) = normalize_references([reference])
        if image is not None:
            self._keep_images([image], 1)
        added = super().add(prediction=prediction, reference=reference, **kwargs)
        self._added = getattr(self, "_added", 0) + 1
        return added

    def _keep_images(self, images: list[Any], expected: int | None) -> None:
        if "images" not in inspect.signature(self._compute).parameters:
            raise ValueError(f"the {self.name} module reads no images: leave images= out (the image metrics' modules, "
                             "clip_score, pac_score, polos, fleur and learned_critic, take them).")
        if expected is not None and len(images) != expected:
            raise ValueError(f"add_batch() got {expected} predictions but {len(images)} images; give one image per "
                             "prediction.")
        pending = getattr(self, "_pending_images", None)
        self._pending_images = (pending or []) + images

    #: The capeval metric families this module computes (``_compute`` takes their options: :func:`takes_options`).
    families: tuple[str, ...] = ()

    def _own_options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        declared = set(inspect.signature(self._compute).parameters) - {"predictions", "references"}
        foreign = [k for k in kwargs if k not in declared]
        unknown = sorted(set(foreign) - option_names())
        if unknown:
            raise ValueError(
                f"Unknown option(s) {unknown} for the {self.name} module; its options: {sorted(declared)} "
                "(options of the other capeval modules are accepted and passed over, for evaluate.combine)."
            )
        return {k: v for k, v in kwargs.items() if k in declared}
