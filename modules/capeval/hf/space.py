"""The gradio Spaces of ``metrics/<name>/app.py``: text a person types in, readable tables out.

The inputs are parsed and scored by :mod:`capeval.hf.space_inputs` (plain functions, no gradio; what each box accepts
is documented there); this module only builds the gradio Blocks around those callbacks (:func:`caption_app`,
:func:`thumb_app`, :func:`image_caption_app`, :func:`lceval_app`) and shows their :class:`SpaceInputError` with
``gr.Error``. ``metrics/<name>/app.py`` calls :func:`caption_space`, :func:`thumb_space`, :func:`critic_space` or
:func:`lceval_space`; ``critic_space(..., models={...})`` / ``lceval_space(..., models={...})`` set the model folders
in code. gradio is imported only when an app is built.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from capeval.hf.space_inputs import (CAPTION_EXAMPLE, CRITIC_DEFAULT_METRICS, CRITIC_EXAMPLE, CRITIC_METRICS,
                                     LCEVAL_EXAMPLE, LCEVAL_FEATURE_COLUMNS, LCEVAL_METRICS, REFERENCE_SEPARATOR,
                                     THUMB_EXAMPLE, SpaceInputError, critic_models, lceval_models, score_captions,
                                     score_image_captions, score_lceval, score_thumb)
from capeval.registry import result_keys

__all__ = ["CAPTION_SPACES", "caption_app", "caption_space", "critic_space", "image_caption_app", "lceval_app",
           "lceval_space", "load_module", "plugin_space", "thumb_app", "thumb_space"]



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


def _caption_controls(gr, metric_choices: Sequence[str] | None, default_metrics: Sequence[str] | None):
    """The inputs every caption Space shares, in page order: the predictions and references boxes, the metrics
    checkboxes (``None`` without ``metric_choices``), the Score and Example buttons and the corpus table."""
    with gr.Row():
        predictions = gr.Textbox(label="Predictions (one caption per line)", lines=6, elem_id="predictions")
        references = gr.Textbox(label=f"References (one line per caption; several separated by "
                                      f"{REFERENCE_SEPARATOR})", lines=6, elem_id="references")
    metrics = None
    if metric_choices:
        metrics = gr.CheckboxGroup(list(metric_choices), value=list(default_metrics or metric_choices),
                                   label="Metrics", elem_id="metrics")
    with gr.Row():
        score = gr.Button("Score", variant="primary", elem_id="score")
        example_button = gr.Button("Example", elem_id="example")
    corpus = gr.Dataframe(headers=["metric", "score"], label="Corpus scores", elem_id="corpus", interactive=False)
    return predictions, references, metrics, score, example_button, corpus


def caption_app(module, *, title: str, description: str, keys: Sequence[str], example: tuple[str, str],
                metric_choices: Sequence[str] | None = None, default_metrics: Sequence[str] | None = None,
                options: Mapping[str, Any] | None = None):
    """gradio Blocks for a caption metric module: predictions, references, (metrics), Score, Example, tables.
    ``options``: keywords passed to every ``compute`` (e.g. model folders)."""
    gr = _gradio()
    with gr.Blocks(title=title) as demo:
        gr.Markdown(f"# {title}\n\n{description}")
        predictions, references, metrics, score, example_button, corpus = _caption_controls(
            gr, metric_choices, default_metrics)
        inputs = [predictions, references] + ([metrics] if metrics is not None else [])
        per_caption = gr.Dataframe(headers=["#", "caption", *keys], label="Per caption", elem_id="per_caption",
                                   interactive=False)
        signature = gr.Textbox(label="Signature", interactive=False, elem_id="signature")

        def run(pred_text, ref_text, chosen=None):
            return score_captions(module.compute, keys, pred_text, ref_text, chosen if metric_choices else None,
                                  options)

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


def _servable_copies(paths: Sequence[str | os.PathLike]) -> list[str]:
    """Copies of ``paths`` in a fresh temporary folder (gradio shows only files under the temp dir or the cwd;
    package data lies in site-packages), the file names kept."""
    folder = Path(tempfile.mkdtemp(prefix="capeval-space-"))
    return [str(shutil.copyfile(path, folder / Path(path).name)) for path in paths]


def image_caption_app(module, *, title: str, description: str, keys: Sequence[str], example: tuple[str, str],
                      example_images: Sequence[str | os.PathLike], metric_choices: Sequence[str],
                      default_metrics: Sequence[str] | None = None, options: Mapping[str, Any] | None = None):
    """gradio Blocks for a metric module that reads images: images (a gallery), predictions, references, metrics,
    Score, Example, tables. ``options``: keywords passed to every ``compute`` (e.g. the critic folders)."""
    gr = _gradio()
    chosen_first = list(default_metrics or metric_choices)
    with gr.Blocks(title=title) as demo:
        gr.Markdown(f"# {title}\n\n{description}")
        images = gr.Gallery(label="Images: one per caption line, in the order of the lines (or one for all)",
                            type="filepath", file_types=["image"], interactive=True, columns=4, height=260,
                            object_fit="contain", elem_id="images")
        predictions, references, metrics, score, example_button, corpus = _caption_controls(
            gr, metric_choices, chosen_first)
        per_caption = gr.Dataframe(headers=["#", "image", "caption", *keys], label="Per caption",
                                   elem_id="per_caption", interactive=False)
        signature = gr.Textbox(label="Signature", interactive=False, elem_id="signature")

        def run(gallery, pred_text, ref_text, chosen):
            return score_image_captions(module.compute, keys, gallery, pred_text, ref_text, chosen, options)

        def run_example(*_):
            paths = _servable_copies(example_images)
            out = run(paths, *example, chosen_first)
            shown = [(path, f"{i}. {Path(path).name}") for i, path in enumerate(paths, 1)]
            return (shown, *example, chosen_first, *out)

        outputs = [corpus, per_caption, signature]
        inputs = [images, predictions, references, metrics]
        score.click(_guarded(run), inputs, outputs)
        example_button.click(_guarded(run_example), None, [*inputs, *outputs])
    return demo


#: Per caption-metric module: title, description, the metric names it offers and those ticked at first.
CAPTION_SPACES: dict[str, dict[str, Any]] = {
    "coco_caption": dict(
        title="COCO caption metrics (capeval)",
        description="BLEU-1..4, METEOR 1.5, ROUGE-L and CIDEr-D with pycocoevalcap's numbers. CIDEr-D's document "
                    "frequencies come from the references you type, so it needs several captions to mean much. "
                    "Tick METEOR to add it (no Java): its first use loads its language data in about a second, "
                    "the very first on a machine also builds its paraphrase cache (about 5 s).",
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
    "sentence_cosine": dict(
        title="Sentence cosine (capeval)",
        description="The cosine similarity, -1 to 1, of each caption's sentence embedding (all-MiniLM-L6-v2) with "
                    "its references' embeddings, averaged over the references: the embedding baseline every "
                    "learned caption metric must beat. No image is read. all-MiniLM-L6-v2 was trained on Flickr30k "
                    "and COCO train2014 caption pairs. The first Score loads the encoder (a few seconds).",
        metrics=("sentence_cosine",), default=("sentence_cosine",)),
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


def plugin_space(app_file: str, metric: str):
    """The Blocks of a plug-in metric's generated Space (``capeval hub build-metric NAME --kind space``): captions
    (and, for a metric that reads images, an image gallery) in, its result keys' tables out; the title and the
    description from the metric's class."""
    import inspect

    from capeval.registry import metric_class

    cls = metric_class(metric)
    description = " ".join((inspect.cleandoc(cls.__doc__ or "").split("\n\n", 1)[0]).split())
    title, keys = f"{metric} (a capeval plug-in metric)", list(result_keys(metric))
    if cls.needs_images:
        from capeval.io import example_images

        return image_caption_app(load_module(app_file), title=title, description=description, keys=keys,
                                 example=CAPTION_EXAMPLE, example_images=example_images(), metric_choices=[metric])
    return caption_app(load_module(app_file), title=title, description=description, keys=keys,
                       example=CAPTION_EXAMPLE)


def thumb_space(app_file: str):
    """The Blocks of ``metrics/thumb/app.py``."""
    return thumb_app(load_module(app_file), title="THumB 1.0 (capeval)",
                     description="THumB rubric aggregation: total = mean of precision and recall (1-5) minus the "
                                 "fluency, conciseness and inclusive-language penalties, per caption and per system.",
                     example=THUMB_EXAMPLE)


def critic_space(app_file: str, models: Mapping[str, str | os.PathLike | None] | None = None):
    """The Blocks of ``metrics/learned_critic/app.py``; ``models``: critic folders by option name
    (``critic_model`` ...), else ``$CAPEVAL_CRITIC_MODEL`` ... (:func:`critic_models`), else the shipped ones.
    Nothing is loaded before the first Score: the app builds without the weights."""
    from capeval.io import example_images

    return image_caption_app(
        load_module(app_file), title="Learned critic (capeval)",
        description="The learned critic of Cui et al. (CVPR 2018): the probability, 0 to 1, that a caption was written "
                    "by a person rather than a captioning model, given the image and a reference (critic), only a "
                    "reference (critic_ref: no image needed) or only the image (critic_img), averaged over the "
                    "references; critic_plus (beyond the paper) adds the all-MiniLM-L6-v2 sentence similarity of "
                    "caption and reference to the caption-level critic. Trained on Flickr8k only, with "
                    "EfficientNet-Lite0 image features. Upload one "
                    "image per caption line, in order, or one image for all lines. The third Example caption has "
                    "its words permuted.",
        keys=[k for name in CRITIC_METRICS for k in result_keys(name)], example=CRITIC_EXAMPLE,
        example_images=example_images(), metric_choices=CRITIC_METRICS, default_metrics=CRITIC_DEFAULT_METRICS,
        options=critic_models(models))


def lceval_app(module, *, title: str, description: str, example: tuple[str, str],
               metric_choices: Sequence[str] = LCEVAL_METRICS, default_metrics: Sequence[str] | None = None,
               options: Mapping[str, Any] | None = None):
    """gradio Blocks for LCEval: predictions, references, metrics, Score, Example, corpus / per-caption / features
    tables. ``options``: keywords passed to every ``compute`` (the network folders)."""
    from capeval.lceval import FEATURE_NAMES

    gr = _gradio()
    chosen_first = list(default_metrics or metric_choices)
    with gr.Blocks(title=title) as demo:
        gr.Markdown(f"# {title}\n\n{description}")
        predictions, references, metrics, score, example_button, corpus = _caption_controls(
            gr, metric_choices, chosen_first)
        per_caption = gr.Dataframe(headers=["#", "caption", *metric_choices], label="Per caption",
                                   elem_id="per_caption", interactive=False)
        features = gr.Dataframe(headers=[*LCEVAL_FEATURE_COLUMNS, *FEATURE_NAMES],
                                label="The 16 features of each caption (all in [0, 1])", elem_id="features",
                                interactive=False)
        signature = gr.Textbox(label="Signature", interactive=False, elem_id="signature")

        def run(pred_text, ref_text, chosen):
            return score_lceval(module.compute, pred_text, ref_text, chosen, options)

        def run_example(*_):
            return (*example, chosen_first, *run(*example, chosen_first))

        outputs = [corpus, per_caption, features, signature]
        inputs = [predictions, references, metrics]
        score.click(_guarded(run), inputs, outputs)
        example_button.click(_guarded(run_example), None, [*inputs, *outputs])
    return demo


def lceval_space(app_file: str, models: Mapping[str, str | os.PathLike | None] | None = None):
    """The Blocks of ``metrics/lceval/app.py``; ``models``: network folders by option name (``lceval_model``,
    ``lceval_released_model``), else ``$CAPEVAL_LCEVAL_MODEL`` ... (:func:`lceval_models`), else the shipped ones.
    Nothing is loaded before the first Score: the app builds without the weights or the vectors."""
    return lceval_app(
        load_module(app_file), title="LCEval (capeval)",
        description="LCEval (Sharif et al., IJCV 2019): the probability, 0 to 1, that a caption was written by a "
                    "person, from 16 lexical, semantic and syntactic features of the caption against its references "
                    "(n-gram precisions, ROUGE, METEOR, word mover's similarity, SPICE, CIDEr-D, mean word "
                    "embeddings, head-word chains). lceval: capeval's retrained network (COCO and Flickr8k pairs, "
                    "every benchmark image left out); lceval_released: the authors' released layer, applied to "
                    "capeval's offline features (GloVe 50-d vectors instead of word2vec / fastText, SPICE without "
                    "Java). The first Score on a new machine takes about 30 s (it builds the COCO document "
                    "frequencies and METEOR's paraphrase cache), later ones a few seconds.",
        example=LCEVAL_EXAMPLE, options=lceval_models(models))
