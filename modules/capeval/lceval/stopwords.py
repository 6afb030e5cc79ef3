"""NLTK's English stop words: what LCEval removes before its word-embedding features (WMD and MOWE).

:data:`STOP_WORDS` is the 179-word list that ``nltk.corpus.stopwords.words('english')`` returned in NLTK
3.2-3.8 (the ``stopwords`` corpus of the NLTK data package, 2018-2023), written out verbatim so that neither
nltk nor its downloader is needed. The reference LCEval code (Sharif et al., 2019) drops these words from
the candidate and reference captions before computing the word mover's distance (feature 7, ``wmd``) and
the mean-of-word-embeddings similarity (feature 10, ``mowe``); :func:`content_words` does the same.

>>> content_words("A dog is running on the grass")
['dog', 'running', 'grass']
"""
from __future__ import annotations

__all__ = ["STOP_WORDS", "content_words"]

# nltk_data/corpora/stopwords/english, in the file's order (179 words)
_NLTK_ENGLISH = (
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've", "you'll", "you'd",
    "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she", "she's", "her", "hers",
    "herself", "it", "it's", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which",
    "who", "whom", "this", "that", "that'll", "these", "those", "am", "is", "are", "was", "were", "be", "been",
    "being", "have", "has", "had", "having", "do", "does", "did", "doing", "a", "an", "the", "and", "but", "if",
    "or", "because", "as", "until", "while", "of", "at", "by", "for", "with", "about", "against", "between",
    "into", "through", "during", "before", "after", "above", "below", "to", "from", "up", "down", "in", "out",
    "on", "off", "over", "under", "again", "further", "then", "once", "here", "there", "when", "where", "why",
    "how", "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not",
    "only", "own", "same", "so", "than", "too", "very", "s", "t", "can", "will", "just", "don", "don't",
    "should", "should've", "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "aren't", "couldn",
    "couldn't", "didn", "didn't", "doesn", "doesn't", "hadn", "hadn't", "hasn", "hasn't", "haven", "haven't",
    "isn", "isn't", "ma", "mightn", "mightn't", "mustn", "mustn't", "needn", "needn't", "shan", "shan't",
    "shouldn", "shouldn't", "wasn", "wasn't", "weren", "weren't", "won", "won't", "wouldn", "wouldn't",
)

STOP_WORDS: frozenset[str] = frozenset(_NLTK_ENGLISH)


def content_words(text: str) -> list[str]:
    """The whitespace tokens of ``text`` lower-cased, in order, without :data:`STOP_WORDS` (repeats kept)."""
    return [w for w in text.lower().split() if w not in STOP_WORDS]
