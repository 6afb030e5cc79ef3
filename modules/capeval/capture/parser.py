"""The FACTUAL scene-graph parser (Li et al. 2023, ``lizhuang144/flan-t5-base-VG-factual-sg``, a Flan-T5-base
fine-tuned to write a sentence's graph), run as CAPTURE runs it, batched.

CAPTURE parses each caption by splitting it into sentences and calling factualscenegraph 0.7.3's
``SceneGraphParser.parse(sentences, beam_size=5, max_output_len=128)`` (its default flow: ``max_input_len=64``,
batches of 32). Per batch of a caption's sentences, the reference measures the longest prompt
(``"Generate Scene Graph: " + sentence``) in tokens *without* the end-of-sequence token, and tokenises every prompt
with ``max_length`` = that length (at most 64) and truncation: the longest prompt of each batch loses its last token
to the end-of-sequence token. :func:`prompt_ids` keeps that rule exactly, caption by caption, so that a sentence's
input ids are the reference's; the generation itself (beam search, 5 beams, ``max_length=128``, early stopping,
decoder start = the pad token) then runs over batches of ``batch_size`` sentences from any captions, each sentence
parsed once per distinct input. A sentence's graph does not depend on the other sentences of its generation batch
(padding is masked; the beams of each row are their own), up to float rounding.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.capture.graphs import PROMPT, clean_graph_text

#: The reference's parser weights on the Hugging Face Hub.
DEFAULT_PARSER = "lizhuang144/flan-t5-base-VG-factual-sg"
#: The reference's settings: sentences per tokenisation batch, prompt tokens, output tokens, beams.
REFERENCE_CHUNK, MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS, BEAMS = 32, 64, 128, 5


def model_folder(spec: str | os.PathLike, option: str) -> Path:
    """``spec`` as a folder: itself, or a Hub model id (owner/name) from the Hugging Face cache (downloaded when
    online); ``FileNotFoundError`` naming ``option`` and the download command otherwise."""
    from capeval.dependencies import require

    path = Path(os.path.expanduser(str(spec)))
    if path.is_dir():
        return path
    if path.exists() or str(spec).startswith((".", "/", "~")) or str(spec).count("/") != 1:
        raise FileNotFoundError(f"{option}: {spec} is neither a folder nor a Hub model id (owner/name).")
    hub = require("huggingface_hub", what="reading a model from the Hub", extra="capture")
    try:
        return Path(hub.snapshot_download(repo_id=str(spec)))
    except Exception as err:  # offline and not cached, a typo, a gated repo
        from capeval.hub_cli import download_command

        raise FileNotFoundError(f"{option}: the Hub model {spec} is not in the Hugging Face cache and could not be "
                                f"downloaded ({type(err).__name__}); download it with: "
                                f"{download_command(str(spec))}, or pass a folder.") from err


class FactualParser:
    """A seq2seq model and its tokenizer that write sentence graphs (:meth:`graphs`)."""

    def __init__(self, tokenizer, model, label: str) -> None:
        self.tokenizer, self.model, self.label = tokenizer, model, label

    @property
    def device(self):
        return next(self.model.parameters()).device

    def prompt_ids(self, captions: Sequence[Sequence[str]]) -> list[list[tuple[int, ...]]]:
        """Each caption's sentences as the reference's input ids (see the module docstring)."""
        out = []
        for sentences in captions:
            prompts = [PROMPT + sentence.strip() for sentence in sentences]
            ids: list[tuple[int, ...]] = []
            for start in range(0, len(prompts), REFERENCE_CHUNK):
                chunk = prompts[start:start + REFERENCE_CHUNK]
                longest = max(len(self.tokenizer.encode(p, add_special_tokens=False)) for p in chunk)
                limit = min(MAX_INPUT_TOKENS, longest)
                ids.extend(tuple(self.tokenizer(p, max_length=limit, truncation=True)["input_ids"]) for p in chunk)
            out.append(ids)
        return out

    def graphs(self, inputs: Sequence[tuple[int, ...]], *, batch_size: int = 32, progress: Any = None) -> list[str]:
        """The cleaned graph text (:func:`~capeval.capture.graphs.clean_graph_text`) of each input, each distinct
        input generated once, ``batch_size`` inputs per ``generate`` (longest first)."""
        from capeval.dependencies import require
        from capeval.progress import progress as bar

        torch = require("torch", what="the capture metric", extra="capture")
        unique = list(dict.fromkeys(inputs))
        order = sorted(range(len(unique)), key=lambda i: (-len(unique[i]), i))
        texts: list[str] = [""] * len(unique)
        pad = self.tokenizer.pad_token_id
        steps = range(0, len(order), batch_size)
        with torch.no_grad():
            for start in bar(steps, total=len(steps), desc="capture: parsing sentences", enabled=progress):
                rows = order[start:start + batch_size]
                width = max(len(unique[i]) for i in rows)
                ids = torch.tensor([list(unique[i]) + [pad] * (width - len(unique[i])) for i in rows])
                mask = torch.tensor([[1] * len(unique[i]) + [0] * (width - len(unique[i])) for i in rows])
                generated = self.model.generate(
                    ids.to(self.device), attention_mask=mask.to(self.device), use_cache=True,
                    decoder_start_token_id=pad, num_beams=BEAMS, max_length=MAX_OUTPUT_TOKENS,
                    early_stopping=True, num_return_sequences=1)
                decoded = self.tokenizer.batch_decode(generated, skip_special_tokens=True,
                                                      clean_up_tokenization_spaces=True)
                for i, text in zip(rows, decoded):
                    texts[i] = clean_graph_text(text)
        where = {key: i for i, key in enumerate(unique)}
        return [texts[where[key]] for key in inputs]


def load_parser(spec: str | os.PathLike | None = None, *, device: Any = None) -> FactualParser:
    """The parser ``spec`` (default :data:`DEFAULT_PARSER`; a Hub id or a folder of transformers' layout), loaded
    once per process and device, float32, in evaluation mode."""
    from capeval.dependencies import default_device, require
    from capeval.loaded_models import load_once

    transformers = require("torch", "transformers", what="the capture metric", extra="capture")[1]
    spec = str(spec if spec is not None else DEFAULT_PARSER)
    target = default_device(device)

    def load() -> FactualParser:
        from capeval.progress import announce

        folder = model_folder(spec, "capture_parser")
        with announce(f"loading the scene-graph parser {spec} (once per process)"):
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
            model = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(folder)).float().to(target).eval()
        return FactualParser(tokenizer, model, spec)

    return load_once("capture_parser", (spec, str(target)), load)


__all__ = ["BEAMS", "DEFAULT_PARSER", "FactualParser", "MAX_INPUT_TOKENS", "MAX_OUTPUT_TOKENS", "REFERENCE_CHUNK",
           "load_parser", "model_folder"]
