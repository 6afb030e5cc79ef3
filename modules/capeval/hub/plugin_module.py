"""The ``evaluate`` module of a plug-in metric, generated from its class: ``capeval hub build-metric NAME``.

A metric from another distribution (an entry point in ``capeval.metrics``, :mod:`capeval.plugins`) has no folder in
capeval's ``metrics/``; everything a module needs is in its class and its registry entry: the name and result keys,
the docstring (the module's description), the options with their declarations (the keywords of ``_compute`` and their
documentation, through :func:`capeval.hf.with_options` and :func:`capeval.hf.takes_options`, as in capeval's own
scripts), whether it reads images, and the distribution to install (``requirements.txt``). The generated folder holds
the same files as one of capeval's own (:mod:`capeval.hub.metric_folder`): ``<folder>.py``, ``README.md``,
``requirements.txt`` and, for a Space, ``app.py``.

Data flows one way: registry entry and class → :class:`PluginModule` (the facts, as data) → the texts.
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass

from capeval._version import __version__

__all__ = ["PluginModule", "module_card", "module_script", "plugin_files", "plugin_module", "space_app"]


@dataclass(frozen=True)
class PluginModule:
    """What the generated module says of a plug-in metric.

    name: the metric's registered name (``"word_count"``); keys: its result keys; summary: the docstring's first line;
    description: the whole docstring (dedented); distribution: ``"capeval-word-count==0.1.0"``; reads_images: whether
    ``compute`` needs one image per prediction; homepage: the distribution's home page (or its PyPI page).
    """

    name: str
    keys: tuple[str, ...]
    summary: str
    description: str
    distribution: str
    reads_images: bool
    homepage: str

    @property
    def class_name(self) -> str:
        """The module class's name: the metric's name in CamelCase, then ``Module``."""
        return "".join(part.capitalize() for part in self.name.split("_")) + "Module"

    @property
    def project(self) -> str:
        """The distribution's project name, without its version."""
        return self.distribution.split("==")[0]


def _homepage(project: str) -> str:
    """The distribution's home page from its metadata (``Home-page`` or the first ``Project-URL``), else its PyPI
    page."""
    from importlib import metadata

    try:
        meta = metadata.metadata(project)
    except metadata.PackageNotFoundError:
        meta = None
    if meta is not None:
        home = meta.get("Home-page")
        if home and home.strip() not in ("", "UNKNOWN"):
            return home.strip()
        for url in meta.get_all("Project-URL") or []:
            if "," in url:
                return url.split(",", 1)[1].strip()
    return f"https://pypi.org/project/{project}/"


def plugin_module(name: str) -> PluginModule:
    """The facts of the registered plug-in metric ``name``; ``ValueError`` when ``name`` is not a plug-in metric (a
    built-in one has its own folder in ``metrics/``)."""
    from capeval.registry import REGISTRY, metric_class

    spec = REGISTRY.get(name)
    if spec is None or not spec.source:
        raise ValueError(f"{name!r} is not a plug-in metric (an entry point of capeval.metrics).")
    cls = metric_class(name)
    doc = inspect.cleandoc(cls.__doc__ or "") or f"The {name} metric."
    return PluginModule(name=name, keys=tuple(spec.keys), summary=doc.split("\n", 1)[0].strip(), description=doc,
                        distribution=spec.source, reads_images=bool(cls.needs_images),
                        homepage=_homepage(spec.source.split("==")[0]))


def _text_literal(text: str) -> str:
    """``text`` as a Python string literal: triple-quoted when that is exact, else its ``repr``."""
    if '"""' in text or "\\" in text or text.endswith('"'):
        return repr(text)
    return '"""\\\n' + text + '\n"""'


def _keyword_description(module: PluginModule) -> str:
    keys = "\n".join(f"    {key} (`float`): the corpus value (see the description).\n"
                     for key in module.keys).rstrip("\n")
    images = ("    images (`list`): one image per prediction, in prediction order: a path, a `PIL.Image.Image`, a\n"
              "        numpy array or a `datasets.Image` value. Give it to `compute`, not to `add_batch`.\n"
              if module.reads_images else "")
    return (f"\n{module.summary}\n\n"
            "Args:\n"
            "    predictions (`list` of `str`): one caption per image.\n"
            "    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption\n"
            "        or a non-empty list of them.\n"
            f"    metrics (`list` of `str` or `str`, optional): \"{module.name}\" (default). Names of other capeval\n"
            "        modules' metrics are left to those modules (`evaluate.combine`).\n"
            "    cleanup (`str`, optional): \"thumb\" (default) or \"none\".\n"
            "    {metric options}\n"
            "    empty (`str`, optional): \"error\" (default: an empty prediction raises ValueError naming it) or\n"
            "        \"zero\" (it scores 0, with an EmptyCaptionWarning naming it).\n"
            f"{images}\n"
            "Returns:\n"
            f"{keys}\n"
            "    per_caption (`dict`): for each key above, one float per prediction.\n"
            "    signature (`str`): every setting that changes a number.\n")


def module_script(module: PluginModule) -> str:
    """The text of the generated ``evaluate`` module script."""
    images = "        images=None,\n" if module.reads_images else ""
    headline = module.summary.replace("\\", "/").replace('"', "'")
    homepage = json.dumps(module.homepage)
    passed = "            images=images,\n" if module.reads_images else ""
    return f'''# Generated by `capeval hub build-metric {module.name}` (capeval {__version__}) from the plug-in metric
# {module.distribution}: regenerate it rather than edit it.
"""{headline} (the capeval plug-in metric `{module.name}`) as a Hugging Face `evaluate`
module.

A thin wrapper: the metric is in the distribution {module.project} (``pip install {module.project}``), found by capeval
through its entry point in ``capeval.metrics``.
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric families this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ({module.name!r},)

_CITATION = ""

_DESCRIPTION = {_text_literal(module.description)}

_KWARGS_DESCRIPTION = with_options({_text_literal(_keyword_description(module))}, _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class {module.class_name}(CaptionModule, evaluate.Metric):
    """{module.name}; see ``capeval.score(..., metrics="{module.name}")``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            codebase_urls=[{homepage}],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        cleanup="thumb",
        empty="error",
{images}        **options,
    ):
        keys = select_metrics(metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {{}}
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            cleanup=cleanup,
            empty=empty,
{passed}            **options,
        )
'''


def _front_matter_text(text: str) -> str:
    """``text`` on one YAML line (a folded scalar's content): no line breaks, no leading indicator."""
    return " ".join(text.split())


def module_card(module: PluginModule) -> str:
    """The module card (``README.md``, with its YAML front matter) of the generated module: the description, the
    result keys and the options table from the declarations."""
    from capeval.hub.card_options import END, START, options_table

    options = f"{START}\n\n{options_table((module.name,))}\n\n{END}"
    keys = ", ".join(f"`{key}`" for key in module.keys)
    images = ", images=images" if module.reads_images else ""
    title = module.name.replace("_", " ").title()
    return f"""---
title: {title}
emoji: 📏
colorFrom: green
colorTo: blue
sdk: gradio
sdk_version: 6.31.0
app_file: app.py
pinned: false
tags:
- evaluate
- metric
- image-captioning
description: >-
  {_front_matter_text(module.summary)}
---

# Metric Card for {title}

## Metric Description

{module.description}

This module was generated by `capeval hub build-metric {module.name}` from the capeval plug-in metric `{module.name}`
of the distribution `{module.distribution}` ([home page]({module.homepage})).

## How to Use

```python
import evaluate

{module.name} = evaluate.load("capeval/{module.name}")
result = {module.name}.compute(predictions=predictions, references=references{images})
```

Requirements: `pip install {module.project} "capeval[evaluate]"`.

### Output Values

{keys} (corpus values), `per_caption` (one value per prediction for each key) and `signature` (every setting that
changes a number).

### Options

{options}
"""


def space_app(module: PluginModule) -> str:
    """The ``app.py`` of the generated Space."""
    return f'''"""Hugging Face Space for the capeval plug-in metric {module.name}: captions in, corpus and per-caption
tables out. Generated by `capeval hub build-metric {module.name}`; run locally with ``python app.py``."""
from capeval.hf.space import plugin_space

demo = plugin_space(__file__, {module.name!r})

if __name__ == "__main__":
    demo.launch()
'''


def plugin_files(name: str, kind: str) -> dict[str, str]:
    """The generated files of the plug-in metric ``name`` by file name, without the script's own file name (the
    caller names it after the folder): ``{"script", "README.md", "app.py" (a Space)}``; the card's YAML keys are
    adjusted to ``kind`` by :mod:`capeval.hub.metric_folder`."""
    module = plugin_module(name)
    files = {"script": module_script(module), "README.md": module_card(module)}
    if kind == "space":
        files["app.py"] = space_app(module)
    return files
