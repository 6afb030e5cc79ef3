"""The gradio Spaces of ``metrics/<name>/app.py``: text a person types in, readable tables out.

Caption metrics (``coco_caption``, ``spice``, ``spice_u``): one predicted caption per line; per caption one line
of references, several separated by ``|``. THumB: one caption per line, ``precision, recall[, fluency,
conciseness, inclusive[, system]]``. The callbacks (:func:`score_captions`, :func:`score_thumb`) are plain
functions (no gradio) that raise :class:`SpaceInputError` naming the bad line; :func:`caption_app` /
:func:`thumb_app` wrap them in gradio Blocks and show those errors with ``gr.Error``. gradio is imported only
when an app is built.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from capeval.registry import result_keys

__all__ = ["CAPTION_EXAMPLE", "CAPTION_SPACES", "DIGITS", "REFERENCE_SEPARATOR", "THUMB_EXAMPLE", "SpaceInputError",
           "caption_app", "caption_space", "load_module", "parse_predictions", "parse_references", "score_captions",
           "score_thumb", "thumb_app", "thumb_space"]

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
                   metrics: Sequence[str] | None = None) -> tuple[list[list[Any]], dict[str, list], str]:
    """``(corpus rows [key, score], per-caption table, signature)``.

    The per-caption table is ``{"headers": ["#", "caption", key...], "data": [[1, caption, score...], ...]}``
    (what ``gr.Dataframe`` shows), with the keys the chosen metrics returned.

    ``compute``: the evaluate module's ``compute``; ``keys``: the result keys shown; ``metrics``: what to pass
    as ``metrics=`` (``None``: the module's default). Errors of the module (``ValueError``/``TypeError`` naming
    ``predictions[i]`` ...) come back as :class:`SpaceInputError` with the same message.
    """
    predictions = parse_predictions(predictions_text)
    references = parse_references(references_text, len(predictions))
    kwargs = {}
    if metrics is not None:
        if not metrics:
            raise SpaceInputError("Choose at least one metric.")
        kwargs["metrics"] = list(metrics)
    try:
        result = compute(predictions=predictions, references=references, **kwargs)
    except (ValueError, TypeError) as err:
        raise SpaceInputError(str(err)) from err
    shown = [k for k in keys if k in result]
    corpus = [[k, _round(result[k])] for k in shown]
    per_caption = {"headers": ["#", "caption", *shown],
                   "data": [[i + 1, p, *(_round(result["per_caption"][k][i]) for k in shown)]
                            for i, p in enumerate(predictions)]}
    return corpus, per_caption, result.get("signature", "")


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


def _gradio():
    try:
        import gradio as gr
    except ImportError as err:
        raise ImportError(f"the Space app needs gradio ({err}): pip install -r requirements.txt") from err
    return gr


def _guarded(function: Callable) -> Callable:
    """``function`` with :class:`SpaceInputError` shown as ``gr.Error`` (the message in the page)."""
    gr = _gradio()

    def run(*args):
        try:
            return function(*args)
        except SpaceInputError as err:
            raise gr.Error(str(err)) from None

    run.__name__ = getattr(function, "__name__", "run")
    return run


def caption_app(module, *, title: str, description: str, keys: Sequence[str], example: tuple[str, str],
                metric_choices: Sequence[str] | None = None, default_metrics: Sequence[str] | None = None):
    """gradio Blocks for a caption metric module: predictions, references, (metrics), Score, Example, tables."""
    gr = _gradio()
    with gr.Blocks(title=title) as demo:
        gr.Markdown(f"# {title}\n\n{description}")
        with gr.Row():
            predictions = gr.Textbox(label="Predictions (one caption per line)", lines=6, elem_id="predictions")
            references = gr.Textbox(label=f"References (one line per caption; several separated by "
                                          f"{REFERENCE_SEPARATOR})", lines=6, elem_id="references")
        inputs = [predictions, references]
        if metric_choices:
            metrics = gr.CheckboxGroup(list(metric_choices), value=list(default_metrics or metric_choices),
                                       label="Metrics", elem_id="metrics")
            inputs.append(metrics)
        with gr.Row():
            score = gr.Button("Score", variant="primary", elem_id="score")
            example_button = gr.Button("Example", elem_id="example")
        corpus = gr.Dataframe(headers=["metric", "score"], label="Corpus scores", elem_id="corpus",
                              interactive=False)
        per_caption = gr.Dataframe(headers=["#", "caption", *keys], label="Per caption", elem_id="per_caption",
                                   interactive=False)
        signature = gr.Textbox(label="Signature", interactive=False, elem_id="signature")

        def run(pred_text, ref_text, chosen=None):
            return score_captions(module.compute, keys, pred_text, ref_text, chosen if metric_choices else None)

        def run_example(*_):
            chosen = list(default_metrics or metric_choices) if metric_choices else None
            out = run(*example, chosen)
            return (*example, *([chosen] if metric_choices else []), *out)

        outputs = [corpus, per_caption, signature]
        score.click(_guarded(run), inputs, outputs)
        example_button.click(_guarded(run_example), None, [*inputs, *outputs])
    return demo


def thumb_app(module, *, title: str, description: str, example: str):
    """gradio Blocks for THumB: rubric rows typed as text, corpus / per-caption / per-system tables."""
    gr = _gradio()
    with gr.Blocks(title=title) as demo:
        gr.Markdown(f"# {title}\n\n{description}")
        rows = gr.Textbox(label="One caption per line: precision, recall[, fluency, conciseness, inclusive[, system]]",
                          lines=8, elem_id="rows")
        samples = gr.Number(value=0, precision=0, label="Bootstrap samples (0: no interval)", elem_id="samples")
        with gr.Row():
            score = gr.Button("Score", variant="primary", elem_id="score")
            example_button = gr.Button("Example", elem_id="example")
        corpus = gr.Dataframe(headers=["metric", "score"], label="Corpus scores", elem_id="corpus", interactive=False)
        per_caption = gr.Dataframe(headers=["#", "precision", "recall", "total"], label="Per caption",
                                   elem_id="per_caption", interactive=False)
        systems = gr.Dataframe(headers=["system", "n", "precision", "recall", "total"], label="Per system",
                               elem_id="systems", interactive=False)
        signature = gr.Textbox(label="Signature", interactive=False, elem_id="signature")

        def run(text, n):
            return score_thumb(module.compute, text, n or 0)

        def run_example(*_):
            return (example, 0, *run(example, 0))

        outputs = [corpus, per_caption, systems, signature]
        score.click(_guarded(run), [rows, samples], outputs)
        example_button.click(_guarded(run_example), None, [rows, samples, *outputs])
    return demo


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
#: Per caption-metric module: title, description, the metric names it offers and those ticked at first.
CAPTION_SPACES: dict[str, dict[str, Any]] = {
    "coco_caption": dict(
        title="COCO caption metrics (capeval)",
        description="BLEU-1..4, METEOR 1.5, ROUGE-L and CIDEr-D with pycocoevalcap's numbers. CIDEr-D's document "
                    "frequencies come from the references you type, so it needs several captions to mean much. "
                    "METEOR starts a Java VM (about 20 s): tick it to add it.",
        metrics=("bleu", "meteor", "rouge_l", "cider_d"), default=("bleu", "rouge_l", "cider_d")),
    "spice": dict(
        title="SPICE without Java (capeval)",
        description="SPICE F-score, precision and recall of the scene-graph tuples (spaCy parse, SPICE's rules, "
                    "WordNet synonyms).",
        metrics=("spice",), default=("spice",)),
    "spice_u": dict(
        title="SPICE-U (capeval)",
        description="SPICE-U: SPICE weighted by how unique each caption's concepts are (uniqueness table from COCO "
                    "train2014).",
        metrics=("spice_u",), default=("spice_u",)),
}


def load_module(app_file: str):
    """The evaluate module of the folder holding ``app_file`` (``metrics/<name>/`` or a built Space folder)."""
    import evaluate

    return evaluate.load(os.path.dirname(os.path.abspath(app_file)))


def caption_space(app_file: str, metric: str):
    """The Blocks of ``metrics/<metric>/app.py`` (``metric``: a key of :data:`CAPTION_SPACES`)."""
    if metric not in CAPTION_SPACES:
        raise ValueError(f"no caption Space for {metric!r}; known: {', '.join(CAPTION_SPACES)}.")
    spec = CAPTION_SPACES[metric]
    several = len(spec["metrics"]) > 1
    return caption_app(load_module(app_file), title=spec["title"], description=spec["description"],
                       keys=[k for name in spec["metrics"] for k in result_keys(name)], example=CAPTION_EXAMPLE,
                       metric_choices=spec["metrics"] if several else None,
                       default_metrics=spec["default"] if several else None)


def thumb_space(app_file: str):
    """The Blocks of ``metrics/thumb/app.py``."""
    return thumb_app(load_module(app_file), title="THumB 1.0 (capeval)",
                     description="THumB rubric aggregation: total = mean of precision and recall (1-5) minus the "
                                 "fluency, conciseness and inclusive-language penalties, per caption and per system.",
                     example=THUMB_EXAMPLE)
