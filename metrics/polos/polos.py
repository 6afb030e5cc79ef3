# Copyright 2024 The capeval authors. Apache-2.0.
"""Polos (Wada et al., CVPR 2024: "Polos: Multimodal Metric Learning from Human Feedback for Image Captioning") as
a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.vision_language.polos`` (``pip install "capeval[evaluate,learned]"``).
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics

#: the capeval metric this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("polos",)

_CITATION = """\
@inproceedings{wada2024polos,
    title     = {Polos: Multimodal Metric Learning from Human Feedback for Image Captioning},
    author    = {Yuiga Wada and Kanta Kaneda and Daichi Saito and Komei Sugiura},
    booktitle = {Proc. of CVPR},
    pages     = {13559--13568},
    year      = {2024},
    url       = {https://arxiv.org/abs/2402.18091},
}
"""

_DESCRIPTION = """\
Polos (Wada et al., CVPR 2024), computed from the authors' released checkpoint as their code computes it: a score in
(0, 1) from a feed-forward network trained on Polaris's 131k human judgments. Its inputs, per reference: supervised
SimCSE (RoBERTa-base) sentence vectors of the candidate c and the reference r - the first token of the 13 hidden
layers mixed by learned weights after a layer norm whose mean and variance are those of the whole batch - with
|c - r| and c * r, and unnormalised CLIP ViT-B/32 features of the image v and of "A photo depicts " + candidate /
reference (t_c, t_r) with |v - t_c|, v * t_c, |t_r - t_c|, t_r * t_c; a sigmoid; the maximum over the references.
As in the reference, items are scored in input order in batches of 32, and a batch reads as many references per
item as its item with the fewest has. The corpus score is the mean. The checkpoint (reprod.zip from the link in
keio-smilab24/Polos's README) is looked for in <capeval cache>/models/polos/ and in the reference's cache; the
SimCSE tokenizer and configuration come from the Hugging Face cache (princeton-nlp/sup-simcse-roberta-base).
Verified against a transcription of the reference on random weights, not on the released checkpoint.
"""

_KWARGS_DESCRIPTION = """
Scores image captions with Polos: the image, the caption and its references.

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption or a
        non-empty list of them.
    metrics (`list` of `str` or `str`, optional): "polos" (the default). Names of other capeval modules' metrics
        are accepted and left to those modules (`evaluate.combine`): this module returns {} (with a warning) when
        "polos" is not named.
    images (`list`): one image per prediction, in prediction order: a path, a `PIL.Image.Image`, a numpy array or
        a `datasets.Image` value. Required (ValueError naming the metric without it). Give it to `compute`, not to
        `add_batch`.
    polos_model (`str`, optional): the checkpoint: default the released one, a folder holding reprod.ckpt and
        hparams.yaml at `<capeval cache>/models/polos/` (the cache: `$CAPEVAL_CACHE_DIR`, else ~/.cache/capeval)
        or in the reference's `~/.cache/torch/yuigawada/reprod/` (FileNotFoundError saying where to download it
        when absent); or such a folder, the .ckpt file, or a .safetensors file of its state dict with hparams.yaml
        beside it. Read as weights only. The signature names it with a hash of its weights.
    polos_text_model (`str`, optional): the SimCSE encoder's configuration and tokenizer: default the
        checkpoint's pretrained_model (princeton-nlp/sup-simcse-roberta-base, from the Hugging Face cache), or a
        local folder. The encoder's weights always come from the checkpoint.
    polos_device (`str`, optional): "cpu", "cuda", "cuda:1", ... Default: CUDA when available, else the CPU.
    polos_batch_size (`int`, optional): items per batch, in input order. Default 32, the reference's evaluation.
        A score depends on its batch (the layer-norm statistics, and how many references every item of the batch
        has): 1 makes each score depend on its own item only, but differ from the paper's. Enters the signature.
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules are accepted and passed over, because `evaluate.combine` sends every
    option to every module; an option no capeval module knows raises ValueError.

Returns:
    polos (`float`): the mean Polos over the captions, in (0, 1), higher = better.
    per_caption (`dict`): {"polos": one float per prediction}.
    signature (`str`): the checkpoint (its folder and file, a hash of its weights), the text encoder, the batch
        size, the reference rule, the prompt and the image preprocessing, e.g.
        "polos:model=reprod/reprod.ckpt#1a2b3c4d,text=princeton-nlp/sup-simcse-roberta-base,batch=32,refs=batch-min,
        prefix=A%20photo%20depicts%20,img=clip-reference-1".

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty reference
        list, a missing or bad image (`images[3] ...`), no `images`, a file that is not a Polos checkpoint (or a
        pickle that would run code), or an unknown option value.
    FileNotFoundError: a missing image file or checkpoint (the default one included: the message says where to
        download it and where to put it). OSError: the text encoder's configuration is neither cached nor reachable
        (the message gives the command that fetches it). ImportError: naming the package to install when torch,
        torchvision, open_clip or transformers are missing.

Examples:
    >>> import evaluate
    >>> polos = evaluate.load("capeval/polos")
    >>> from capeval.io import example_images
    >>> images = example_images()  # three small photos bundled with capeval: a cat, an astronaut, a coffee cup
    >>> predictions = ["a tabby cat looking at the camera", "an astronaut in an orange suit",
    ...                "a cup of coffee on a saucer"]
    >>> references = [["a cat with stripes"], ["a smiling woman in a space suit in front of a flag"],
    ...               "a cup of coffee with a spoon on a wooden table"]

    Scoring needs the released checkpoint (reprod.zip, from the link in keio-smilab24/Polos's README, unzipped into
    capeval's cache folder or named with polos_model), so these lines are not run by the test suite:

    >>> result = polos.compute(predictions=predictions, references=references, images=images)  # doctest: +SKIP
    >>> sorted(result)  # doctest: +SKIP
    ['per_caption', 'polos', 'signature']
    >>> all(0 < s < 1 for s in result["per_caption"]["polos"])  # doctest: +SKIP
    True

    Every image is required, and the options are checked before any model is loaded:

    >>> try:
    ...     polos.compute(predictions=predictions, references=references)
    ... except ValueError as err:
    ...     print(str(err).split(":")[0])
    polos needs one image per prediction
    >>> try:
    ...     polos.compute(predictions=predictions, references=references, images=images, polos_batch_size=0)
    ... except ValueError as err:
    ...     print(err)
    polos_batch_size must be a positive integer, got 0.
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Polos(CaptionModule, evaluate.Metric):
    """Polos; see ``capeval.score(..., metrics="polos", images=...)``."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://arxiv.org/abs/2402.18091"],
            codebase_urls=["https://github.com/keio-smilab24/Polos"],
        )

    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        images=None,
        polos_model=None,
        polos_text_model=None,
        polos_device=None,
        polos_batch_size=32,
        empty="error",
    ):
        keys = select_metrics(metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            images=images,
            polos_model=polos_model,
            polos_text_model=polos_text_model,
            polos_device=polos_device,
            polos_batch_size=polos_batch_size,
            empty=empty,
        )
