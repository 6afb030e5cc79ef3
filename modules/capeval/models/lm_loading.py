"""Load any saved caption language model (unigram, LSTM, interpolation, transformers causal LM) by folder."""
from __future__ import annotations

import json
from pathlib import Path

from capeval.models.caption_lm import INTERPOLATED_FILE, UNIGRAM_FILE, CaptionLM, InterpolatedLM, TransformersCausalLM, UnigramLM


def load_caption_lm(path: str | Path, device: str | None = None) -> CaptionLM:
    """Load a saved caption LM: a unigram (``unigram.json``), an LSTM (``config.json`` of
    ``capeval-lstm-lm``), an interpolation (``interpolated.json``) or any transformers causal LM folder."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No caption language model at {path}.")
    if path.is_file() or (path / UNIGRAM_FILE).is_file():
        return UnigramLM.load(path)
    if (path / INTERPOLATED_FILE).is_file():
        from capeval.models.lstm_lm import LSTMLanguageModel

        alpha = json.loads((path / INTERPOLATED_FILE).read_text(encoding="utf-8"))["alpha"]
        return InterpolatedLM(UnigramLM.load(path / "unigram"), LSTMLanguageModel.from_pretrained(path / "lstm"), alpha)
    config = path / "config.json"
    if config.is_file() and json.loads(config.read_text(encoding="utf-8")).get("model_type") == "capeval-lstm-lm":
        from capeval.models.lstm_lm import LSTMLanguageModel

        return LSTMLanguageModel.from_pretrained(path, device=device)
    if config.is_file():
        return TransformersCausalLM(path, device=device)
    raise ValueError(f"{path}: not a caption language model (no {UNIGRAM_FILE}, {INTERPOLATED_FILE} or config.json).")
