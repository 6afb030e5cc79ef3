"""The English text tools of CAPTURE: NLTK's own algorithms on the data NLTK finds (:mod:`capeval.capture.nltk_data`).

:class:`NltkTools` does what the reference's calls do — ``nltk.sent_tokenize``, ``nltk.word_tokenize``,
``nltk.pos_tag``, ``WordNetLemmatizer().lemmatize`` and ``wordnet.synsets`` — with NLTK's classes
(``PunktSentenceTokenizer``, ``NLTKWordTokenizer``, ``PerceptronTagger``, ``WordNetCorpusReader``) built from the
resources' files where NLTK's search path finds them; capeval never changes that path (WordNet's reader accepts
only folders on it). Lemmas and synonym sets are kept per word
(they are pure functions of the word).
"""
from __future__ import annotations

import json
import warnings
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from capeval.capture.nltk_data import PUNKT_DIR, TAGGER_DIR, TAGGER_FILES, WORDNET_DIR, find_resources

#: WordNet's part-of-speech letters as the reference passes them (``wordnet.NOUN``, ``wordnet.ADJ``).
NOUN, ADJ = "n", "a"


class NltkTools:
    """Sentence and word splitting, part-of-speech tags, lemmas and WordNet synonyms; ``folders``: the resources'
    folders, as :func:`~capeval.capture.nltk_data.find_resources` gives them."""

    def __init__(self, folders: dict[str, Path]) -> None:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
        from nltk.tag.perceptron import PerceptronTagger
        from nltk.tokenize import NLTKWordTokenizer
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

        self.folders = dict(folders)
        self._sentences = PunktSentenceTokenizer(_punkt_parameters(folders[PUNKT_DIR], PunktParameters()))
        self._words = NLTKWordTokenizer()
        self._tagger = PerceptronTagger(load=False)
        weights, tagdict, classes = (json.loads((folders[TAGGER_DIR] / name).read_text(encoding="utf-8"))
                                     for name in TAGGER_FILES)
        self._tagger.decode_json_params((weights, tagdict, classes))
        with warnings.catch_warnings():  # "multilingual functions are not available": CAPTURE reads English only
            warnings.filterwarnings("ignore", message="The multilingual functions", category=UserWarning)
            self._wordnet = WordNetCorpusReader(str(folders[WORDNET_DIR]), None)
        self.lemmatize = lru_cache(maxsize=1 << 16)(self._lemmatize)
        self.synonyms = lru_cache(maxsize=1 << 16)(self._synonyms)

    def sentences(self, text: str) -> list[str]:
        """``nltk.sent_tokenize(text)``."""
        return self._sentences.tokenize(text)

    def words(self, text: str) -> list[str]:
        """``nltk.word_tokenize(text)``: the sentences, then NLTK's Treebank-style word tokenizer on each."""
        return [token for sentence in self.sentences(text) for token in self._words.tokenize(sentence)]

    def tags(self, tokens: list[str]) -> list[tuple[str, str]]:
        """``nltk.pos_tag(tokens)``: (token, Penn Treebank tag) pairs."""
        return self._tagger.tag(tokens)

    def _lemmatize(self, word: str, pos: str) -> str:
        """``WordNetLemmatizer().lemmatize(word, pos)``: the shortest of WordNet's lemmas of ``word``, else ``word``."""
        lemmas = self._wordnet._morphy(word, pos)
        return min(lemmas, key=len) if lemmas else word

    def _synonyms(self, word: str) -> frozenset[str]:
        """The lemma names of every WordNet synset of ``word`` (all parts of speech), as the reference's
        ``get_synonyms``."""
        return frozenset(lemma.name() for synset in self._wordnet.synsets(word) for lemma in synset.lemmas())

    def nouns(self, text: str) -> set[str]:
        """The lemmas (as nouns) of the tokens of ``text`` tagged ``NN*``: the reference's
        ``get_all_lemmatized_nouns``, as a set."""
        return {self.lemmatize(token, NOUN) for token, tag in self.tags(self.words(text)) if tag.startswith("NN")}


def _punkt_parameters(folder: Path, params):
    """NLTK's ``load_punkt_params`` on ``folder``'s four files (read as NLTK's ``PunktDecoder`` reads them)."""
    def lines(name: str) -> list[str]:
        text = (folder / name).read_text(encoding="utf-8")
        return [line[:-1] if line.endswith("\n") else line for line in text.splitlines(keepends=True)]

    params.collocations = {tuple(line.split("\t")) for line in lines("collocations.tab")}
    params.sent_starters = set(lines("sent_starters.txt"))
    params.abbrev_types = set(lines("abbrev_types.txt"))
    params.ortho_context = defaultdict(int, {word: int(flags) for word, flags in
                                             (line.split("\t") for line in lines("ortho_context.tab"))})
    return params


def load_tools() -> NltkTools:
    """The :class:`NltkTools` of the resources NLTK finds (``FileNotFoundError`` naming the fix when one is missing),
    loaded once per process and set of folders."""
    from capeval.dependencies import require
    from capeval.loaded_models import load_once

    require("nltk", what="the capture metric", extra="capture")
    folders = {sub: path.resolve() for sub, path in find_resources().items()}
    return load_once("capture_nltk", tuple(sorted((k, str(v)) for k, v in folders.items())),
                     lambda: NltkTools(folders))


__all__ = ["ADJ", "NOUN", "NltkTools", "load_tools"]
