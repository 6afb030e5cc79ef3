"""Concept keys from captions, exactly as capeval's SPICE sees them.

A concept key is a SPICE tuple's element strings joined by single spaces — what the SPICE-U reference
code does with SPICE's ``-detailed`` output (an element merged from synonyms reads ``word1/word2``).
Captions go through the same clean-up, tokenizer and parser as the ``spice`` metric, so keys in a
uniqueness table built here match the keys met when scoring.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from capeval.spice.graph import SceneGraph, SpiceTuple


def concept_key(t: SpiceTuple) -> str:
    return " ".join(t.text())


def concept_extractor(
    *,
    cleanup: str = "thumb",
    tokenizer: str = "ptb",
    spice_input: str = "tokens",
    model: str | None = None,
    workers: int = 1,
    synonyms: bool = True,
    show_progress: bool | None = False,
) -> tuple[Callable[[Sequence[str]], list[set[str]]], dict[str, str]]:
    """Return ``(extract, settings)``: ``extract(texts)`` gives each caption's set of concept keys."""
    from capeval.batch import CaptionBatch
    from capeval.spice.metric import Spice
    from capeval.spice.parser import DEFAULT_MODEL, PARSER_VERSION
    from capeval.meteor.synonyms import default_synonyms

    spice = Spice(spice_parser_model=model or DEFAULT_MODEL, spice_workers=workers, spice_input=spice_input,
                  spice_synonyms=synonyms)

    def extract(texts: Sequence[str]) -> list[set[str]]:
        # Each caption is its own "prediction" (with itself as a dummy reference, which is never parsed twice).
        batch = CaptionBatch(list(texts), [[t] for t in texts], cleanup=cleanup, tokenizer=tokenizer,
                             progress=show_progress)
        preds, _ = spice.texts(batch)
        spice.parser.progress = show_progress
        parsed = spice.parser.parse(preds)
        syn = default_synonyms()
        return [{concept_key(t) for t in SceneGraph.from_tuples([tuples], syn, synonyms).tuples()} for tuples in parsed]

    settings = {"cleanup": cleanup, "tokenizer": tokenizer, "spice_input": spice_input,
                "parser": PARSER_VERSION, "model": model or DEFAULT_MODEL, "synonyms": str(synonyms)}
    return extract, settings
