"""``Capture``: the ``capture`` metric (CAPTURE, Dong et al. 2024, the DetailCaps benchmark's metric for detailed
captions), exact to capture-metric 0.1.13 on the same parser, phrase encoder and NLTK data.

Per caption: ``capture`` in [0, 1] (the mean over its references of (α·F1_objects + β·F1_attributes +
γ·F1_relations) / (α + β + γ)), and ``capture_object_f1``, ``capture_attribute_f1``, ``capture_relation_f1`` (the
means of each F1); the corpus values are their means. ``result["capture_details"]`` holds, per caption, the nine
precisions, recalls and F1s as fractions (the reference prints them ×100, rounded to 2 decimals). An empty caption has
no elements: every F-score 0.

Models (Hugging Face ids read through its cache, or folders): the FACTUAL parser
``lizhuang144/flan-t5-base-VG-factual-sg`` (:mod:`capeval.capture.parser`) and the phrase encoder
``sentence-transformers/all-mpnet-base-v2`` (mean pooling, 384 word pieces, read by transformers); NLTK's Punkt,
perceptron tagger and WordNet where NLTK finds them (:mod:`capeval.capture.nltk_data`: ``capeval capture nltk-data``
writes them offline). On a GPU when there is one (the reference needs ``cuda:0``); parsing and encoding are batched
over all captions (:mod:`capeval.capture.pipeline`).
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option

#: The reference's phrase encoder.
DEFAULT_TEXT_ENCODER = "sentence-transformers/all-mpnet-base-v2"
#: Word pieces the phrase encoder reads (all-mpnet-base-v2's max_seq_length).
TEXT_ENCODER_TOKENS = 384
#: The reference's version, in the signature.
REFERENCE_VERSION = "0.1.13"


def _weight(default: float, what: str) -> Option:
    return Option(default=default, kind="float", minimum=0,
                  help=f"the weight of the {what} F1 in the score (default {default:g}, the paper's; "
                       "capture_alpha + capture_beta must be 1, as the reference requires); enters the signature")


class Capture(CaptionMetric):
    """CAPTURE (see the module docstring)."""

    name = "capture"
    uses_tokens: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = {
        "capture_alpha": _weight(0.5, "object"),
        "capture_beta": _weight(0.5, "attribute"),
        "capture_gamma": _weight(0.2, "relation"),
        "capture_synonym_matching": Option(
            default=True, kind="bool",
            help="match elements that one contains the other of, or that share a WordNet lemma name, after the exact "
                 "matches (default on, the paper's); enters the signature"),
        "capture_soft_matching": Option(
            default=True, kind="bool",
            help="match what is left by the cosine of phrase vectors (default on, the paper's; off: no phrase encoder "
                 "is loaded); enters the signature"),
        "capture_stop_words": Option(
            default=True, kind="bool",
            help="drop the reference's 317 stop-word objects (background, scene, image, ...) from every graph "
                 "(default on, the paper's); enters the signature"),
        "capture_parser": Option(
            default=None, kind="model", metavar="ID|DIR",
            help="the scene-graph parser: a Hub id or a folder of a transformers seq2seq model (default "
                 "lizhuang144/flan-t5-base-VG-factual-sg, the reference's, from the Hugging Face cache); enters the "
                 "signature"),
        "capture_text_encoder": Option(
            default=None, kind="model", metavar="ID|DIR",
            help="the phrase encoder of soft matching: a Hub id or a folder of a transformers encoder, mean-pooled "
                 f"(default {DEFAULT_TEXT_ENCODER}, the reference's, from the Hugging Face cache); enters the "
                 "signature"),
        "capture_device": Option(default=None, kind="device",
                                 help="device: cpu, cuda, cuda:1 ... (default: CUDA when available)"),
        "capture_batch_size": Option(
            default=32, kind="int", minimum=1,
            help="sentences per parser call and phrases per encoder call (default 32; scores agree across sizes to "
                 "float32 rounding)"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        total = self.config["capture_alpha"] + self.config["capture_beta"]
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"capture_alpha + capture_beta must be 1 (CAPTURE's reference requires it), got "
                             f"{self.config['capture_alpha']:g} + {self.config['capture_beta']:g} = {total:g}.")

    @classmethod
    def check_available(cls) -> None:
        from capeval.dependencies import require

        require("torch", "transformers", "nltk", what="the capture metric", extra="capture")

    @classmethod
    def missing_weights(cls) -> tuple[str, str, str] | None:
        """The first of its defaults that is not here: NLTK's data, then the parser and the phrase encoder in the
        Hugging Face cache (never downloaded)."""
        from capeval.capture.nltk_data import build_command, find_resources
        from capeval.capture.parser import DEFAULT_PARSER
        from capeval.hub_cli import download_command

        try:
            find_resources()
        except FileNotFoundError as err:
            return str(err), "CAPTURE's NLTK data", build_command()
        try:
            import huggingface_hub
        except ImportError as err:
            return str(err), "huggingface_hub", 'pip install "capeval[capture]"'
        for repo in (DEFAULT_PARSER, DEFAULT_TEXT_ENCODER):
            try:
                huggingface_hub.snapshot_download(repo, local_files_only=True)
            except Exception:  # noqa: BLE001 - huggingface_hub raises several "not cached" errors
                return (f"weights not in the Hugging Face cache: {download_command(repo)}", repo,
                        download_command(repo))
        return None

    def _models(self):
        from capeval.capture.language import load_tools
        from capeval.capture.parser import load_parser

        tools = load_tools()
        parser = load_parser(self.config["capture_parser"], device=self.config["capture_device"])
        encoder = None
        if self.config["capture_soft_matching"]:
            from capeval.capture.parser import model_folder
            from capeval.models.sentence_encoder import load_sentence_encoder

            spec = self.config["capture_text_encoder"] or DEFAULT_TEXT_ENCODER
            encoder = load_sentence_encoder(model_folder(spec, "capture_text_encoder"),
                                            device=self.config["capture_device"], max_length=TEXT_ENCODER_TOKENS)
        return tools, parser, encoder

    def signature_value(self) -> str:
        """``v=0.1.13,parser=<id|folder>,enc=<id|folder|none>,a=.5,b=.5,g=.2,syn=yes,soft=yes,stop=yes``."""
        from capeval.capture.parser import DEFAULT_PARSER
        from capeval.sentence_cosine.scores import encoder_label as model_label  # <folder>@<hash of its files> or the id

        c = self.config
        flag = lambda on: "yes" if on else "no"  # noqa: E731
        encoder = model_label(c["capture_text_encoder"] or DEFAULT_TEXT_ENCODER) if c["capture_soft_matching"] \
            else "none"
        return (f"v={REFERENCE_VERSION},parser={model_label(c['capture_parser'] or DEFAULT_PARSER)},enc={encoder},"
                f"a={c['capture_alpha']:g},b={c['capture_beta']:g},g={c['capture_gamma']:g},"
                f"syn={flag(c['capture_synonym_matching'])},soft={flag(c['capture_soft_matching'])},"
                f"stop={flag(c['capture_stop_words'])}")

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        from capeval.capture.pipeline import capture_scores
        from capeval.capture.scores import MatchSettings
        from capeval.capture.stop_words import STOP_WORDS

        c = self.config
        tools, parser, encoder = self._models()
        settings = MatchSettings(c["capture_alpha"], c["capture_beta"], c["capture_gamma"],
                                 c["capture_synonym_matching"], c["capture_soft_matching"])
        result = capture_scores(list(batch.raw_predictions), [list(r) for r in batch.raw_references], parser=parser,
                                tools=tools, encoder=encoder, settings=settings,
                                stop_words=frozenset(STOP_WORDS) if c["capture_stop_words"] else frozenset(),
                                batch_size=c["capture_batch_size"], progress=batch.progress)
        per = {"capture": result.scores}
        details = []
        for f in result.per_caption:
            row = {}
            for part in ("object", "attribute", "relation"):
                precision, recall, f1 = getattr(f, part)
                row.update({f"{part}_precision": precision, f"{part}_recall": recall, f"{part}_f1": f1})
            details.append(row)
        for part in ("object", "attribute", "relation"):
            per[f"capture_{part}_f1"] = [row[f"{part}_f1"] for row in details]
        corpus = {key: float(np.mean(values)) if values else 0.0 for key, values in per.items()}
        return MetricOutput(corpus=corpus, per_caption=per, signature=self.signature_value(),
                            extra={"capture_details": details})


__all__ = ["Capture", "DEFAULT_TEXT_ENCODER", "REFERENCE_VERSION", "TEXT_ENCODER_TOKENS"]
