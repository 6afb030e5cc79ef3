"""Shared pieces of capeval's Hugging Face ``evaluate`` module scripts (``metrics/<name>/<name>.py``)."""
from __future__ import annotations


def caption_features():
    """Input features of caption metrics: references as a list of strings per prediction, or one string."""
    import datasets

    return [
        datasets.Features(
            {"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
        ),
        datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
    ]
