"""Where data comes from: the training data of every model capeval ships or builds on, the data of every benchmark,
and the rule that says when the two overlap (contamination).

Pure data and one rule; no I/O, no heavy imports. :mod:`capeval.catalog` names each model's sources and components
with the keys of :data:`SOURCES`; :mod:`capeval.meta_evaluation.contamination` resolves a metric (and its options) to
models and asks :func:`overlaps` against :data:`BENCHMARK_DATA`.

**A source** is one part of one dataset and what of it was read: images, captions (human or machine text), or human
judgments. Two sources overlap when

* their datasets are the same, or one contains the other (:data:`CONTAINS`: Flickr30k's 31,783 images include
  Flickr8k's images and their captions),
* their parts meet (the same part, one of them ``"all"``, or a part inside the other: :data:`PART_WITHIN`, e.g.
  COCO's Karpathy test split lies inside val2014), and
* they share a kind of content (images with images, captions with captions, judgments with judgments).

A model source may declare ``left_out``: benchmarks whose images were removed from it before training (checked by
the tests named in the model's card). Overlap with those benchmarks' data is then not counted.

What is *not* counted, and why: document frequencies or other corpus statistics read at scoring time (CIDEr-D's,
SPICE-U's uniqueness table: no parameter is fitted to them, and pycocoevalcap's own CIDEr-D reads the evaluated
references); the same photo reached through two datasets' different file names (a handful of COCO train2014 images
are Flickr8k or Flickr30k photos: the COCO-caption models leave them out by Flickr photo id, see
:mod:`capeval.corpora.coco_train2014`); a dataset's other split (a model trained on Flickr8k *train* is in-domain on
Flickr8k-Expert, whose 1,000 images and 5,822 candidates are all from the *test* split, but has not seen them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

IMAGES, CAPTIONS, JUDGMENTS = "images", "captions", "judgments"
#: The dataset name of training data that was never disclosed (OpenAI CLIP's WIT-400M): overlap with any benchmark is
#: unknown, so a model reading it is marked unknown everywhere (:mod:`capeval.meta_evaluation.contamination`).
UNDISCLOSED = "undisclosed"


@dataclass(frozen=True)
class Source:
    """One part of one dataset and what of it was read.

    ``dataset`` and ``part`` decide overlap (see the module docstring); ``content`` is a subset of
    ``{"images", "captions", "judgments"}``; ``description`` is the human-readable name used in reasons.
    """

    key: str
    dataset: str
    part: str
    content: frozenset[str]
    description: str
    left_out: tuple[str, ...] = field(default=())


def _source(key: str, dataset: str, part: str, content: tuple[str, ...], description: str,
            left_out: tuple[str, ...] = ()) -> Source:
    return Source(key, dataset, part, frozenset(content), description, left_out)


#: Benchmarks whose images capeval's COCO / Flickr8k training corpora leave out (by image file name; the COCO-caption
#: corpora also by Flickr photo id). The Flickr8k test split, CrowdFlower's and COMPOSITE-8k's images, is never read.
REPORTED_BENCHMARKS = ("flickr8k-expert", "flickr8k-crowdflower", "composite", "pascal50s", "thumb")

#: Every source a model or a benchmark reads, by key.
SOURCES: dict[str, Source] = {s.key: s for s in (
    # --- training data of capeval's own models
    _source("flickr8k-train", "flickr8k", "train", (IMAGES, CAPTIONS),
            "Flickr8k train split (6,000 images, their 30,000 captions)"),
    _source("flickr8k-dev", "flickr8k", "dev", (IMAGES, CAPTIONS),
            "Flickr8k dev split (1,000 images, their captions; epoch selection / combiner fits)"),
    _source("flickr8k-captioner-captions", "flickr8k", "train", (CAPTIONS,),
            "machine captions of capeval's Flickr8k captioner on Flickr8k train / dev images"),
    _source("coco-train2014-captions", "coco", "train2014", (CAPTIONS,),
            "COCO train2014 human captions (414,113 captions of 82,783 images; reported benchmarks' images left out)",
            left_out=REPORTED_BENCHMARKS),
    _source("coco-karpathy-test-pairs", "coco", "karpathy-test", (IMAGES, CAPTIONS),
            "COCO Karpathy-test captions and 3 systems' machine captions (2,683 of 5,000 images; every image of "
            "COMPOSITE, Flickr8k-Expert, PASCAL-50S and THumB left out)",
            left_out=REPORTED_BENCHMARKS),
    # --- the authors' released LCEval layer
    _source("flickr30k-lceval-train", "flickr30k", "all", (IMAGES, CAPTIONS),
            "Flickr30k human captions and 3 COCO-trained systems' machine captions (Sharif et al. 2019 §4.3; "
            "captions overlapping their validation / test sets removed)"),
    _source("flickr8k-expert-judgments", "flickr8k-expert", "all", (JUDGMENTS,),
            "Flickr8k-Expert judgments"),
    # --- pretrained parts
    _source("flickr30k-caption-pairs", "flickr30k", "all", (CAPTIONS,),
            "Flickr30k same-image caption pairs (all 31,783 images, which include Flickr8k's images and captions; "
            "SNLI's premises are Flickr30k captions too)"),
    _source("coco-train2014-caption-pairs", "coco", "train2014", (CAPTIONS,),
            "COCO train2014 same-image caption pairs (\"COCO Image captions 828,395\")"),
    _source("web-sentence-pairs", "web-text", "all", (CAPTIONS,),
            "about 1 billion other sentence pairs (Reddit, S2ORC, WikiAnswers, PAQ, Stack Exchange, MS MARCO, ...)"),
    _source("glove-6b-corpus", "web-text", "wikipedia-gigaword", (CAPTIONS,),
            "Wikipedia 2014 + Gigaword 5 (6B tokens)"),
    _source("imagenet-1k-train", "imagenet", "train", (IMAGES,), "ImageNet-1k train images"),
    _source("ontonotes-5", "ontonotes", "all", (CAPTIONS,), "OntoNotes 5 and WordNet 3 (spaCy's English model)"),
    # --- vision-language models (CLIP-S / PAC-S): not trained by capeval
    _source("openai-clip-wit-400m", UNDISCLOSED, "all", (IMAGES, CAPTIONS),
            "OpenAI's WIT: 400 million web image-text pairs, never released or described item by item (its overlap "
            "with any benchmark is unknown)"),
    _source("sharegpt4v-pt-coco", "coco", "all", (IMAGES, CAPTIONS),
            "ShareGPT4V-PT's COCO images (train2017, which holds most val2014 images, the Karpathy test split's among "
            "them) with Share-Captioner's detailed machine captions: Long-CLIP's fine-tuning data"),
    _source("sharegpt4v-pt-web", UNDISCLOSED, "all", (IMAGES, CAPTIONS),
            "ShareGPT4V-PT's other images (LAION, CC, SBU from LLaVA's pretraining set; SAM) with Share-Captioner's "
            "machine captions: web images not listed against any benchmark (their overlap is unknown)"),
    _source("coco-train2014", "coco", "train2014", (IMAGES, CAPTIONS),
            "COCO train2014 images and their human captions (no benchmark left out)"),
    _source("pac-s-synthetic-positives", "coco", "train2014", (IMAGES, CAPTIONS),
            "PAC-S's positive augmentations: BLIP captions of COCO train2014 images and Stable Diffusion images of their "
            "captions"),
    # --- LLaVA-1.5 (Liu et al. 2024), FLEUR's judge: not trained by capeval
    _source("llava-1.5-data", UNDISCLOSED, "all", (IMAGES, CAPTIONS),
            "LLaVA-1.5's training data: Vicuna's ShareGPT conversations (never released item by item), LCS-558K "
            "(LAION / CC / SBU captions) and the 665k instruction mix (COCO train2017 images, whose 2014 counterparts "
            "include val2014's, GQA, OCR-VQA, TextVQA, Visual Genome): its overlap with any benchmark is unknown"),
    # --- Polos (Wada et al. 2024): trained on Polaris's train split, from SimCSE and CLIP
    _source("polaris-train", "polaris", "train", (CAPTIONS, JUDGMENTS),
            "Polaris train split: candidates, references and human judgments (images: MS-COCO and nocaps)"),
    _source("snli-mnli-pairs", "flickr30k", "all", (CAPTIONS,),
            "SNLI + MNLI entailment pairs (supervised SimCSE); SNLI's premises are Flickr30k captions, which include "
            "Flickr8k's"),
    _source("roberta-pretraining-text", "web-text", "roberta", (CAPTIONS,),
            "RoBERTa's 160 GB of pre-training text (BookCorpus, Wikipedia, CC-News, OpenWebText, Stories)"),
    # --- CAPTURE (Dong et al. 2024): the FACTUAL parser (Li et al. 2023) and all-mpnet-base-v2
    _source("factual-vg-descriptions", "visual-genome", "all", (CAPTIONS,),
            "Visual Genome region descriptions with their scene graphs (FACTUAL-MR's 40,369 re-annotated captions "
            "and VG's own graphs): the FACTUAL parser's training text; text only (VG's images, half of them COCO "
            "images, were not read)"),
    _source("flan-t5-pretraining-text", "web-text", "c4-flan", (CAPTIONS,),
            "T5's C4 web text and the Flan instruction mixture (Flan-T5-base, the parser's starting point)"),
    # --- benchmark data
    _source("flickr8k-test", "flickr8k", "test", (IMAGES, CAPTIONS),
            "Flickr8k test split (1,000 images, their captions)"),
    _source("flickr8k-crowdflower-judgments", "flickr8k-crowdflower", "all", (JUDGMENTS,),
            "Flickr8k-CrowdFlower judgments"),
    _source("flickr30k-karpathy-test", "flickr30k", "karpathy-test", (IMAGES, CAPTIONS),
            "Flickr30k Karpathy test split (991 images, their captions)"),
    _source("coco-karpathy-test", "coco", "karpathy-test", (IMAGES, CAPTIONS),
            "COCO Karpathy test split (val2014 images, their captions)"),
    _source("composite-machine-captions", "composite", "all", (CAPTIONS,), "COMPOSITE's machine captions"),
    _source("composite-judgments", "composite", "all", (JUDGMENTS,), "COMPOSITE judgments"),
    _source("pascal-sentences", "pascal-sentences", "all", (IMAGES, CAPTIONS),
            "UIUC PASCAL Sentences images (PASCAL VOC 2008) and PASCAL-50S's 50 captions per image"),
    _source("pascal50s-judgments", "pascal50s", "all", (JUDGMENTS,), "PASCAL-50S judgments"),
    _source("abstract-scenes", "abstract-scenes", "all", (IMAGES, CAPTIONS),
            "Abstract Scenes clip art and ABSTRACT-50S's 48 captions per scene"),
    _source("abstract50s-judgments", "abstract50s", "all", (JUDGMENTS,), "ABSTRACT-50S judgments"),
    _source("thumb-machine-captions", "thumb", "all", (CAPTIONS,), "THumB's machine captions (4 systems)"),
    _source("thumb-judgments", "thumb", "all", (JUDGMENTS,), "THumB 1.0 judgments"),
    # Nebula and Polaris: MS-COCO and nocaps images with those datasets' human references; neither dataset card
    # nor paper abstract names the splits, so each is declared as all of its dataset (any model trained on COCO
    # counts as overlapping, whatever split it read).
    _source("coco-split-unstated", "coco", "all", (IMAGES, CAPTIONS),
            "MS-COCO images and their human captions (split not stated: counted as all of COCO)"),
    _source("nocaps-split-unstated", "nocaps", "all", (IMAGES, CAPTIONS),
            "nocaps images (Open Images) and their human captions (split not stated: counted as all of nocaps)"),
    _source("polaris-candidates", "polaris", "all", (CAPTIONS,),
            "Polaris's candidate captions (human-written and ten captioning models')"),
    _source("polaris-judgments", "polaris", "all", (JUDGMENTS,), "Polaris judgments"),
    _source("nebula-candidates", "nebula", "all", (CAPTIONS,), "Nebula's candidate captions"),
    _source("nebula-judgments", "nebula", "all", (JUDGMENTS,), "Nebula judgments"),
    _source("detailcaps-coco-images", "coco", "all", (IMAGES,), "DetailCaps-4870's COCO images (split not stated)"),
    _source("detailcaps-flickr-images", "flickr30k", "all", (IMAGES,),
            "DetailCaps-4870's Flickr images (Flickr30k's, split not stated)"),
    _source("detailcaps-web-images", "laion-cc-sbu-coyo-sam", "all", (IMAGES,),
            "DetailCaps-4870's LAION, CC, SBU, Coyo and SAM images"),
    _source("detailcaps-captions", "detailcaps", "all", (CAPTIONS,),
            "DetailCaps-4870's GPT-4V / Gemini-1.5-Pro / GPT-4o references and CogVLM / ShareCaptioner / LLaVA-1.5 "
            "candidates"),
    _source("detailcaps-judgments", "detailcaps", "all", (JUDGMENTS,), "DetailCaps-4870's GPT-4 judgments"),
    _source("docci-images-captions", "docci", "all", (IMAGES, CAPTIONS),
            "DOCCI images and their human detailed descriptions (CapArena's images and references)"),
    _source("caparena-captions", "caparena", "all", (CAPTIONS,), "CapArena's 14 models' detailed captions"),
    _source("caparena-judgments", "caparena", "all", (JUDGMENTS,), "CapArena's 6,523 human pairwise battles"),
    _source("dci-images-captions", "dci", "all", (IMAGES, CAPTIONS),
            "DCI (Densely Captioned Images, SA-1B photos) and their dense human captions: LongCap-Arena's images and "
            "references"),
    _source("longcap-arena-captions", "longcap-arena", "all", (CAPTIONS,), "LongCap-Arena's candidate long captions"),
    _source("longcap-arena-judgments", "longcap-arena", "all", (JUDGMENTS,),
            "LongCap-Arena's 32,246 human judgments (descriptiveness, relevance, fluency)"),
)}

#: ``{dataset: datasets it contains whole}``: Flickr30k includes Flickr8k's images and their captions.
CONTAINS: dict[str, frozenset[str]] = {"flickr30k": frozenset({"flickr8k"})}

#: ``{(dataset, part): parts that contain it}``: COCO's Karpathy test split (5,000 images) lies inside val2014.
PART_WITHIN: dict[tuple[str, str], frozenset[str]] = {("coco", "karpathy-test"): frozenset({"val2014"})}


@dataclass(frozen=True)
class BenchmarkData:
    """The data a benchmark (or one of its subsets) is made of: :data:`SOURCES` keys."""

    name: str
    sources: tuple[str, ...]
    description: str


def _bench(name: str, sources: tuple[str, ...], description: str) -> BenchmarkData:
    unknown = [s for s in sources if s not in SOURCES]
    assert not unknown, unknown
    return BenchmarkData(name, sources, description)


_COMPOSITE_8K = ("flickr8k-test", "composite-machine-captions", "composite-judgments")
_COMPOSITE_30K = ("flickr30k-karpathy-test", "composite-machine-captions", "composite-judgments")
_COMPOSITE_COCO = ("coco-karpathy-test", "composite-machine-captions", "composite-judgments")

#: ``{benchmark name or "composite/<subset>": BenchmarkData}``: what each benchmark's images, candidates, references
#: and judgments are. COMPOSITE's COCO subset: 2,007 val2014 images, all inside the Karpathy test split (checked on
#: the files: ``tests/benchmarks/test_contamination.py``).
BENCHMARK_DATA: dict[str, BenchmarkData] = {b.name: b for b in (
    _bench("flickr8k-expert", ("flickr8k-test", "flickr8k-expert-judgments"),
           "Flickr8k test images; candidates and references are Flickr8k test captions"),
    _bench("flickr8k-crowdflower", ("flickr8k-test", "flickr8k-crowdflower-judgments"),
           "Flickr8k test images; candidates and references are Flickr8k test captions"),
    _bench("composite", tuple(dict.fromkeys(_COMPOSITE_8K + _COMPOSITE_30K + _COMPOSITE_COCO)),
           "Flickr8k test, Flickr30k Karpathy test and COCO val2014 (Karpathy test) images; human and machine "
           "candidates"),
    _bench("composite/8k", _COMPOSITE_8K, "997 Flickr8k test images"),
    _bench("composite/30k", _COMPOSITE_30K, "991 Flickr30k Karpathy-test images"),
    _bench("composite/coco", _COMPOSITE_COCO, "2,007 COCO val2014 images, all in the Karpathy test split"),
    _bench("pascal50s", ("pascal-sentences", "pascal50s-judgments"), "1,000 UIUC PASCAL Sentences images"),
    _bench("abstract50s", ("abstract-scenes", "abstract50s-judgments"), "500 Abstract Scenes clip-art scenes"),
    _bench("thumb", ("coco-karpathy-test", "thumb-machine-captions", "thumb-judgments"),
           "500 COCO val2014 images (Karpathy test); 4 systems' captions and one human caption each"),
    _bench("nebula", ("coco-split-unstated", "nocaps-split-unstated", "nebula-candidates", "nebula-judgments"),
           "32,978 MS-COCO and nocaps images (splits not stated: all of both counted); candidates, human scores"),
    _bench("polaris", ("coco-split-unstated", "nocaps-split-unstated", "polaris-candidates", "polaris-judgments"),
           "MS-COCO and nocaps images (splits not stated: all of both counted); human and ten models' candidates"),
    _bench("detailcaps", ("detailcaps-coco-images", "detailcaps-flickr-images", "detailcaps-web-images",
                          "detailcaps-captions", "detailcaps-judgments"),
           "4,870 COCO, Flickr, LAION, CC, SBU, Coyo and SAM images; three models' detailed captions judged by GPT-4"),
    _bench("caparena", ("docci-images-captions", "caparena-captions", "caparena-judgments"),
           "DOCCI images; 14 models' and DOCCI's human detailed captions in 6,523 human battles"),
    _bench("longcap-arena", ("dci-images-captions", "longcap-arena-captions", "longcap-arena-judgments"),
           "7,805 DCI images; long candidate captions judged on descriptiveness, relevance and fluency"),
    *(_bench(f"longcap-arena/{aspect}", ("dci-images-captions", "longcap-arena-captions", "longcap-arena-judgments"),
             f"LongCap-Arena's {name} judgments") for aspect, name in
      (("desc", "descriptiveness"), ("rel", "relevance"), ("flu", "fluency"))),
    _bench("coco-karpathy-test", ("coco-karpathy-test",), "5,000 COCO val2014 images (Karpathy test)"),
)}


def benchmark_data(benchmark: str, subset: str | None = None) -> BenchmarkData:
    """The :class:`BenchmarkData` of ``benchmark`` (``subset``: COMPOSITE's ``8k``, ``30k`` or ``coco``).

    ``KeyError`` naming the known benchmarks for any other name.
    """
    key = f"{benchmark}/{subset}" if subset else benchmark
    if key not in BENCHMARK_DATA:
        raise KeyError(f"no data declaration for benchmark {key!r}; known: {', '.join(BENCHMARK_DATA)}")
    return BENCHMARK_DATA[key]


def _datasets_meet(a: Source, b: Source) -> bool:
    if a.dataset == b.dataset:
        return a.part == b.part or "all" in (a.part, b.part) \
            or a.part in PART_WITHIN.get((b.dataset, b.part), ()) or b.part in PART_WITHIN.get((a.dataset, a.part), ())
    if b.dataset in CONTAINS.get(a.dataset, ()):
        return a.part == "all"
    if a.dataset in CONTAINS.get(b.dataset, ()):
        return b.part == "all"
    return False


def overlaps(training: Source, benchmark: Source, benchmark_name: str | None = None) -> bool:
    """Whether ``training`` (what a model read) shares data with ``benchmark`` (what a benchmark is made of).

    ``benchmark_name`` (``"thumb"``, ``"composite/coco"``...) lets ``training.left_out`` apply: a source that left a
    benchmark's images out does not overlap that benchmark.
    """
    if benchmark_name is not None and benchmark_name.split("/")[0] in training.left_out:
        return False
    return bool(training.content & benchmark.content) and _datasets_meet(training, benchmark)


__all__ = ["BENCHMARK_DATA", "BenchmarkData", "CONTAINS", "PART_WITHIN", "REPORTED_BENCHMARKS", "SOURCES", "Source", "UNDISCLOSED",
           "benchmark_data", "overlaps"]
