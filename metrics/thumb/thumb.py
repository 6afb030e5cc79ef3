# Copyright 2024 The capeval authors. Apache-2.0.
"""THumB 1.0 rubric aggregation (Kasai et al., NAACL 2022) as a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.thumb`` (``pip install capeval``).
"""
import datasets
import evaluate
from capeval.thumb import score as thumb_score

_CITATION = """\
@inproceedings{kasai2022thumb,
    title     = {Transparent Human Evaluation for Image Captioning},
    author    = {Jungo Kasai and Keisuke Sakaguchi and Lavinia Dunagan and Jacob Morrison and Ronan Le Bras and
                 Yejin Choi and Noah A. Smith},
    booktitle = {Proc. of NAACL},
    year      = {2022},
    url       = {https://arxiv.org/abs/2111.08940},
}
@inproceedings{koehn2004significance,
    title     = {Statistical Significance Tests for Machine Translation Evaluation},
    author    = {Philipp Koehn},
    booktitle = {Proc. of EMNLP},
    year      = {2004},
}
"""

_DESCRIPTION = """\
THumB 1.0 (Transparent Human Benchmark) aggregates rubric-based human judgments of image captions:
precision and recall on a 1-5 scale minus fluency, conciseness and inclusive-language penalties.
The total of a caption is (P + R) / 2 - penalties (re-weightable); per system the module reports the
mean of every rubric item, 90 % bootstrap confidence intervals (images resampled, Koehn 2004) and how
often the system is strictly best / worst on an image (best / worst in both P and R).
"""

_KWARGS_DESCRIPTION = """
Aggregates THumB rubric scores of captions.

Args:
    precision (`list` of `float`): per caption, 1-5.
    recall (`list` of `float`): per caption, 1-5.
    fluency (`list` of `float`, optional): per caption fluency penalty; THumB's signed values (<= 0, e.g.
        -0.1) or positive magnitudes (0.1): only the magnitude counts. 0 = no problem; leaving the
        list out means no fluency penalty for any caption.
    conciseness (`list` of `float`, optional): per caption conciseness penalty (same convention).
    inclusive (`list` of `float`, optional): per caption inclusive-language penalty (same convention).
    systems (`list` of `str`, optional): per caption system name; enables per-system results.
        A keyword of `compute()` (not stored by `add_batch`): give it for all captions at `compute()`.
    images (`list` of `str`, optional): per caption image id; enables image-level bootstrap and
        strictly best/worst counts. Also a keyword of `compute()`.
    precision_weight (`float`, optional): weight of P in the total (R gets 1 - it). Default 0.5.
    fluency_scale, conciseness_scale, inclusive_scale (`float`, optional): penalty multipliers. Default 1.
    bootstrap_samples (`int`, optional): bootstrap replicates (0: no intervals). Default 1000.
    seed (`int`, optional): bootstrap seed. Default 12345.
    confidence_level (`float`, optional): interval level. Default 0.9.

Returns:
    total (`float`): mean total over all captions.
    total_ci (`tuple` or `None`): (low, high) bootstrap interval of `total`.
    per_caption (`dict`): {"total": [float per caption]}.
    systems (`dict`): per system name: n, precision, recall, fluency, conciseness, inclusive (mean penalty
        magnitudes), total, precision_ci, recall_ci, total_ci, strictly_best, strictly_worst,
        images_compared (the last three None without `images`).
    signature (`str`): weights, penalty scales, bootstrap settings, best/worst definition, version.

Raises:
    ValueError: naming the caption for missing, non-numeric or out-of-range values.

Examples:
    >>> import evaluate
    >>> thumb = evaluate.load("capeval/thumb")
    >>> result = thumb.compute(
    ...     precision=[5, 3, 4, 4], recall=[5, 3, 3, 4],
    ...     fluency=[-0.1, 0, 0, 0], conciseness=[0, 0, 0, 0], inclusive=[0, 0, 0, 0],
    ...     systems=["human", "model", "human", "model"], images=["img1", "img1", "img2", "img2"],
    ...     bootstrap_samples=200)
    >>> [round(t, 2) for t in result["per_caption"]["total"]]
    [4.9, 3.0, 3.5, 4.0]
    >>> round(result["systems"]["human"]["total"], 2), round(result["systems"]["model"]["total"], 2)
    (4.2, 3.5)
    >>> result["systems"]["human"]["strictly_best"], result["systems"]["model"]["strictly_worst"]
    (1, 1)
    >>> result["signature"].split("|")[0]
    'thumb:p=0.5,r=0.5,flu=1,con=1,inc=1'

    Recall-oriented weighting (e.g. for engaging social-media captions):

    >>> r = thumb.compute(precision=[5, 3], recall=[2, 5], precision_weight=0.25, bootstrap_samples=0)
    >>> [round(t, 2) for t in r["per_caption"]["total"]], r["total_ci"]
    ([2.75, 4.5], None)
"""

_FEATURES = datasets.Features(
    {
        "precision": datasets.Value("float64"),
        "recall": datasets.Value("float64"),
        "fluency": datasets.Value("float64"),
        "conciseness": datasets.Value("float64"),
        "inclusive": datasets.Value("float64"),
    }
)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Thumb(evaluate.Metric):
    """THumB 1.0 rubric aggregation; see ``capeval.thumb.score``."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=_FEATURES,
            reference_urls=["https://arxiv.org/abs/2111.08940", "https://github.com/jungokasai/THumB"],
            codebase_urls=["https://github.com/jungokasai/THumB"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Like `evaluate.Metric.compute`; the three penalty lists may be left out (no penalties)."""
        kwargs = self._fill_inputs(predictions, references, kwargs)
        return super().compute(**kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Like `evaluate.Metric.add_batch`; the three penalty lists may be left out (no penalties)."""
        kwargs = self._fill_inputs(predictions, references, kwargs)
        return super().add_batch(**kwargs)

    @staticmethod
    def _fill_inputs(predictions, references, kwargs):
        if predictions is not None or references is not None:
            raise ValueError(
                "THumB takes rubric scores, not predictions/references: pass precision=, recall= and "
                "optionally fluency=, conciseness=, inclusive= (one value per caption)."
            )
        given = [name for name in _FEATURES if kwargs.get(name) is not None]
        if not given:
            return kwargs
        for name in ("precision", "recall"):
            if kwargs.get(name) is None:
                raise ValueError(f"{name} is missing: THumB needs precision= and recall= (1-5 per caption).")
        n = len(kwargs["precision"])
        for name in ("fluency", "conciseness", "inclusive"):
            if kwargs.get(name) is None:
                kwargs[name] = [0.0] * n
        return kwargs

    def _compute(
        self,
        precision,
        recall,
        fluency,
        conciseness,
        inclusive,
        systems=None,
        images=None,
        precision_weight=0.5,
        fluency_scale=1.0,
        conciseness_scale=1.0,
        inclusive_scale=1.0,
        bootstrap_samples=1000,
        seed=12345,
        confidence_level=0.9,
    ):
        return thumb_score(
            precision,
            recall,
            fluency,
            conciseness,
            inclusive,
            systems=systems,
            images=images,
            precision_weight=precision_weight,
            fluency_scale=fluency_scale,
            conciseness_scale=conciseness_scale,
            inclusive_scale=inclusive_scale,
            bootstrap_samples=bootstrap_samples,
            seed=seed,
            confidence_level=confidence_level,
        )
