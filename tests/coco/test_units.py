"""BLEU / ROUGE-L / CIDEr-D on small seeded random corpora against pycocoevalcap (edge cases: ties in
the closest reference length, repeated n-grams, empty captions, one reference, many references), and
the CIDEr-D document-frequency modes."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

import capeval
from capeval.coco.ngrams import ngrams_of
from capeval.coco.bleu import Bleu
from capeval.coco.cider import CiderD, cider_from_ngrams
from capeval.coco.rouge import RougeL

from support.coco_parity import assert_same, pretokenized_batch, pycoco_scores

VOCAB = ["a", "dog", "cat", "runs", "on", "the", "grass", "red", "ball", "with", "two", "men"]


def random_corpus(seed: int, n_items: int = 60, allow_empty: bool = False):
    rng = random.Random(seed)

    def caption(lo: int) -> str:
        length = rng.randint(lo, 14)
        # a small vocabulary so that n-grams repeat and many lengths tie
        return " ".join(rng.choice(VOCAB[: rng.randint(3, len(VOCAB))]) for _ in range(length))

    hyps = [caption(0 if allow_empty else 1) for _ in range(n_items)]
    refs = [[caption(1) for _ in range(rng.randint(1, 6))] for _ in range(n_items)]
    return hyps, refs


def ours(hyps, refs, metrics=("bleu", "rouge_l", "cider_d")) -> dict:
    batch = pretokenized_batch(hyps, refs)
    out: dict = {"per_caption": {}}
    for cls in {"bleu": Bleu, "rouge_l": RougeL, "cider_d": CiderD}.values():
        if cls.name in metrics:
            result = cls().compute(batch)
            out.update(result.corpus)
            out["per_caption"].update(result.per_caption)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_random_corpora_match_pycocoevalcap(seed):
    hyps, refs = random_corpus(seed)
    assert_same(ours(hyps, refs), pycoco_scores(hyps, refs))


@pytest.mark.parametrize("seed", range(3))
def test_empty_predictions_match_pycocoevalcap_bleu_and_cider(seed):
    """An empty prediction (all punctuation after tokenisation) scores as in pycocoevalcap (BLEU, CIDEr)
    and 0 in ROUGE-L (pycocoevalcap splits '' into [''], which also gives 0 against non-empty refs)."""
    hyps, refs = random_corpus(100 + seed, allow_empty=True)
    hyps[0] = ""
    result = ours(hyps, refs)
    assert_same(result, pycoco_scores(hyps, refs))
    assert result["per_caption"]["rouge_l"][0] == 0.0
    assert result["per_caption"]["cider_d"][0] == 0.0
    assert result["per_caption"]["bleu_1"][0] == 0.0


def test_hand_computed_bleu_and_rouge():
    # prediction "a b c d", one reference "a b c e": p1 = 3/4, p2 = 2/3, same length (no brevity penalty)
    result = ours(["a b c d"], [["a b c e"]], ("bleu", "rouge_l"))
    assert result["bleu_1"] == pytest.approx(0.75, abs=1e-8)
    assert result["bleu_2"] == pytest.approx((0.75 * 2 / 3) ** 0.5, abs=1e-8)
    # LCS 3: P = R = 3/4, so F = 3/4 whatever beta
    assert result["rouge_l"] == pytest.approx(0.75)


def test_one_image_cider_is_zero_with_reference_df():
    """With df from the evaluated references (pycocoevalcap), one image gives N = 1, idf = 0."""
    result = capeval.score(["a dog runs on the grass"], [["a dog runs on the grass"]], metrics="cider_d", tokenizer="ptb-java")
    assert result["cider_d"] == 0.0
    assert "cider_d:df=refs,sigma=6" in result["signature"]


def test_unknown_cider_df_lists_the_choices():
    with pytest.raises(ValueError, match=r"cider_df must be one of 'references', 'coco-val2014' or a DocumentFrequency table, got 'coco-train'"):
        capeval.score(["a dog"], [["a dog"]], metrics="cider_d", tokenizer="ptb-java", cider_df="coco-train")


def test_ngram_table_spells_its_grams():
    ng = ngrams_of([["a", "b", "a", "b"]], [[["b", "a"]]], n=3)
    grams = ng.table.gram_strings()
    counts = dict(zip(grams, ng.hyp.toarray()[0].tolist()))
    assert counts == {"a": 2, "b": 2, "a b": 2, "b a": 1, "a b a": 1, "b a b": 1}
    assert len(set(grams)) == len(grams)


def test_grams_spelled_from_their_prefix_grams_are_their_tokens_joined():
    """gram_strings builds an order-k gram from its first k-1 tokens' gram: the tokens joined by single spaces, also
    when tokens were re-split (Unicode spaces, empty tokens) and up to order 5."""
    import random

    from capeval.coco.ngrams import count_ngrams

    rng = random.Random(5)
    words = ["a", "dog", "runs", "on", "the", "grass", "cat", "x\u00a0y", "", "b c"]
    for _ in range(200):
        captions = [[rng.choice(words) for _ in range(rng.randint(0, 9))] for _ in range(rng.randint(0, 30))]
        table = count_ngrams(captions, rng.randint(1, 5))
        ids = table.token_ids.tolist()
        joined = [" ".join(table.vocabulary[t] for t in ids[start:start + k + 1])
                  for start, k in zip(table.first_position.tolist(), table.order.tolist())]
        assert table.gram_strings() == joined


def test_tokens_with_unicode_spaces_are_split_like_pycocoevalcap():
    """pycocoevalcap's BLEU/CIDEr split the space-joined tokens with str.split(): so do we."""
    ng = ngrams_of([["a\u00a0dog", "runs"]], [[["a", "dog runs"]]], n=1)
    assert ng.table.lengths.tolist() == [3, 3]


@pytest.mark.parametrize("odd_token", [None, "a\u00a0dog"])
def test_repeated_caption_objects_are_counted_once_with_the_table_of_every_copy(odd_token):
    """A batch's repeated references are one token list each: counted once, the table (vocabulary, gram ids,
    counts, token ids, spelled grams) is the one counting every copy gives; BLEU, ROUGE-L and CIDEr-D the same."""
    import random

    import numpy as np

    from capeval.coco.bleu import bleu_from_ngrams
    from capeval.coco.cider import cider_from_ngrams
    from capeval.coco.document_frequency import reference_document_frequency
    from capeval.coco.ngrams import count_ngrams
    from capeval.coco.rouge import rouge_l_from_ngram_table

    rng = random.Random(12)
    words = ["a", "dog", "runs", "on", "the", "grass", "cat", "sits", "red", "ball"] + ([odd_token] if odd_token else [])
    pool = [[rng.choice(words) for _ in range(rng.randint(1, 12))] for _ in range(40)]
    preds = [list(rng.choice(pool)) for _ in range(120)]  # copies: distinct objects
    refs = [[rng.choice(pool) for _ in range(rng.randint(1, 5))] for _ in preds]  # the same objects, repeated
    shared = ngrams_of(preds, refs)
    copied = ngrams_of(preds, [[list(r) for r in rr] for rr in refs])
    assert shared.table.distinct_counts is not None and copied.table.distinct_counts is None
    a, b = shared.table, copied.table
    assert a.tokens_as_given == b.tokens_as_given == (odd_token is None) and a.vocabulary == b.vocabulary
    for name in ("order", "lengths", "token_ids", "token_row", "first_position"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(a.counts, name), getattr(b.counts, name)), name
    assert a.gram_strings() == b.gram_strings()
    assert np.array_equal(bleu_from_ngrams(shared, 4)[1], bleu_from_ngrams(copied, 4)[1])
    df, n_docs = reference_document_frequency(shared)
    assert np.array_equal(df, reference_document_frequency(copied)[0])
    assert np.array_equal(cider_from_ngrams(shared, df, n_docs)[1], cider_from_ngrams(copied, df, n_docs)[1])
    n_refs = np.array([len(r) for r in refs])
    rouge = rouge_l_from_ngram_table(a, len(preds), n_refs)
    assert (rouge is None) == (odd_token is not None)
    if rouge is not None:
        assert np.array_equal(rouge, rouge_l_from_ngram_table(b, len(preds), n_refs))
    assert count_ngrams([pool[0], pool[0]], 2).counts.shape[0] == 2


# -- document frequencies from COCO val2014 --------------------------------------------------------------


def test_document_frequency_matches_pycocoevalcap_doc_freq():
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    from capeval.coco.document_frequency import document_frequency_from_captions

    hyps, refs = random_corpus(7, n_items=40)
    scorer = CiderScorer(n=4)
    for h, r in zip(hyps, refs):
        scorer += (h, r)
    scorer.compute_doc_freq()
    theirs = {" ".join(g): int(c) for g, c in scorer.document_frequency.items()}
    assert document_frequency_from_captions([[r.split() for r in rs] for rs in refs]) == theirs


def _document_frequency_as_before(documents, n=4):
    """The table as format 2 computed it: each document's captions the references of one empty prediction."""
    from capeval.coco.document_frequency import reference_document_frequency

    ng = ngrams_of([[] for _ in documents], documents, n)
    df, _ = reference_document_frequency(ng)
    return {g: int(c) for g, c in zip(ng.table.gram_strings(), df.tolist()) if c > 0}


def test_document_frequency_arrays_equal_the_sparse_matrix_count_on_coco():
    """The first 2,000 COCO val2014 images' captions (PTB-tokenised), counted both ways; plus tokens that are empty
    or hold whitespace (re-split as pycocoevalcap does), documents without captions and empty captions."""
    from capeval.coco.captions import coco_captions
    from capeval.coco.document_frequency import document_frequency_arrays, document_frequency_from_captions
    from capeval.text import get_tokenizer

    images = [caps for caps in coco_captions("val2014").values() if caps][:2000]
    tok = get_tokenizer("ptb")
    documents = [tok.tokenize(caps) for caps in images]
    documents += [[], [[]], [["a\u00a0man", "", "rides", " a\thorse "], ["a", "man"]], [["\u3000"]]]
    grams, counts = document_frequency_arrays(documents)
    before = _document_frequency_as_before(documents)
    assert len(grams) == len(set(grams)) == len(before) > 50_000
    assert dict(zip(grams, counts.tolist())) == before
    assert before["a man rides a"] >= 2 and before["a"] > 1000
    assert document_frequency_from_captions(documents) == before
    no_grams, no_counts = document_frequency_arrays([[], [[""]], [[" "]]])
    assert no_grams == [] and no_counts.size == 0


@pytest.fixture(scope="module")
def coco_df(tmp_path_factory):
    """The COCO val2014 df table for (none, ptb-java), computed once into a temporary cache dir."""
    import os

    from capeval.coco import document_frequency as cider_df

    cache = tmp_path_factory.mktemp("cache")
    old = os.environ.get("CAPEVAL_CACHE_DIR")
    os.environ["CAPEVAL_CACHE_DIR"] = str(cache)
    cider_df._MEMORY.clear()
    try:
        table = cider_df.coco_document_frequency(cleanup="none", tokenizer="ptb-java")
        yield table, cache
    finally:
        cider_df._MEMORY.clear()
        if old is None:
            del os.environ["CAPEVAL_CACHE_DIR"]
        else:
            os.environ["CAPEVAL_CACHE_DIR"] = old


@pytest.mark.slow
@pytest.mark.java
def test_coco_df_table_is_cached_atomically(coco_df):
    from capeval.coco import document_frequency as cider_df

    table, cache = coco_df
    assert table.n_documents == 40504
    assert table.df["a"] > 30000 and table.df["a man"] > 5000 and table.df["dog"] < 40504
    files = list((cache / "cider_df").iterdir())
    assert len(files) == 1 and files[0].suffix == ".df"  # no temporary file left behind
    assert "_tok-ptb-java" in files[0].name and "clean" not in files[0].name  # tokens never see the clean-up
    data = files[0].read_bytes()
    assert data.startswith(cider_df.MAGIC)
    header = json.loads(data[len(cider_df.MAGIC):data.index(b"\n", len(cider_df.MAGIC))])
    assert header["settings"] == table.settings and header["n_documents"] == 40504
    assert header["n_grams"] == len(table.df)
    cider_df._MEMORY.clear()
    again = cider_df.coco_document_frequency(cleanup="none", tokenizer="ptb-java")  # from disk now
    assert again.df == table.df and again is not table


@pytest.mark.slow
@pytest.mark.java
def test_coco_df_cider_equals_pycocoevalcap_formula(coco_df):
    """pycocoevalcap's own CIDEr-D with its df replaced by the COCO table and N = 40504."""
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    from capeval.text.ptb_java import JavaPTBTokenizer

    table, _ = coco_df
    preds = ["A dog runs on the grass.", "Two men playing frisbee in a park", "a red double decker bus"]
    refs = [
        ["A brown dog running on a lawn.", "A dog sprints through a field."],
        ["Two people throw a frisbee.", "men in a park with a frisbee", "A frisbee game."],
        ["A red bus on a city street."],
    ]
    result = capeval.score(preds, refs, metrics="cider_d", cleanup="none", tokenizer="ptb-java", cider_df="coco-val2014")
    assert "cider_d:df=coco-val2014,sigma=6" in result["signature"]

    tok = JavaPTBTokenizer()
    hyps = [" ".join(t) for t in tok.tokenize(preds)]
    ref_strings = [[" ".join(t) for t in tok.tokenize(rs)] for rs in refs]
    scorer = CiderScorer(n=4, sigma=6.0)
    for h, rs in zip(hyps, ref_strings):
        scorer += (h, rs)
    # log(len(crefs)) is the reference-length term: pad crefs (zip stops at the predictions)
    scorer.crefs += [[{}]] * (table.n_documents - len(scorer.crefs))
    scorer.document_frequency.update({tuple(g.split(" ")): float(c) for g, c in table.df.items()})
    theirs = np.array(scorer.compute_cider())
    assert np.abs(np.array(result["per_caption"]["cider_d"]) - theirs).max() < 1e-9
    assert abs(result["cider_d"] - theirs.mean()) < 1e-9
    assert result["cider_d"] > 0.5  # a single-image call is meaningful with corpus df


def test_cider_from_ngrams_is_zero_for_unseen_everything():
    ng = ngrams_of([["x", "y"]], [[["p", "q"]]])
    corpus, per = cider_from_ngrams(ng, np.zeros(ng.table.counts.shape[1]), 10)
    assert corpus == 0.0 and per.tolist() == [0.0]


def test_cider_warns_when_document_frequencies_come_from_few_predictions():
    import warnings

    import capeval
    from capeval.coco.cider import MIN_DF_DOCUMENTS, SmallCorpusWarning

    refs = [["a dog runs on the grass", "a brown dog"]]
    with pytest.warns(SmallCorpusWarning, match="cider_df='coco-val2014'") as record:
        one = capeval.score(["a dog runs"], refs, metrics=["cider_d"])
    assert one["cider_d"] == 0.0 and "always scores 0" in str(record[0].message)
    few = [f"a dog number {i} runs" for i in range(MIN_DF_DOCUMENTS - 1)]
    with pytest.warns(SmallCorpusWarning, match=f"only {MIN_DF_DOCUMENTS - 1} prediction"):
        capeval.score(few, refs * len(few), metrics=["cider_d"])
    enough = few + ["a cat sleeps"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallCorpusWarning)
        capeval.score(enough, refs * len(enough), metrics=["cider_d"])


def test_rouge_from_the_ngram_table_equals_rouge_from_tokens():
    """ROUGE-L reuses the token ids BLEU / CIDEr-D counted; same scores, and the fallback when tokens were re-split."""
    import random

    import numpy as np

    from capeval.coco.ngrams import ngrams_of
    from capeval.coco.rouge import rouge_l_from_ngram_table, rouge_l_scores

    rng = random.Random(6)
    words = ["a", "dog", "runs", "on", "the", "grass", "cat", "sits", "red", "ball"]
    preds = [[rng.choice(words) for _ in range(rng.randint(0, 12))] for _ in range(300)]
    refs = [[[rng.choice(words) for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(1, 5))] for _ in preds]
    counted = ngrams_of(preds, refs)
    n_refs = np.array([len(r) for r in refs])
    from_table = rouge_l_from_ngram_table(counted.table, counted.n_predictions, n_refs)
    assert from_table is not None and np.array_equal(from_table, rouge_l_scores(preds, refs))
    odd = [["a b", "dog"]] + preds[1:]  # a token holding a space: the table re-split it, so it is not used
    assert rouge_l_from_ngram_table(ngrams_of(odd, refs).table, len(odd), n_refs) is None
