"""``capeval.hf.compute_metrics`` inside a real ``transformers.Seq2SeqTrainer.evaluate`` (a tiny
``VisionEncoderDecoderModel`` built from configs, random weights, CPU), checked against ``capeval.score`` on
captions decoded independently; plus the lazy imports and the example script."""
from __future__ import annotations

import importlib.util
import logging

import pytest
from support import ROOT, run_python

import capeval
from capeval.hf import compute_metrics

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

FAST = "bleu,rouge_l,cider_d"
KEYS = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d"]


def _example():
    spec = importlib.util.spec_from_file_location("trainer_example", ROOT / "examples" / "trainer_compute_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = _example()


@pytest.fixture(scope="module")
def setup():
    """Tokenizer, rows (one caption per row, 3 rows per image) and a model trained for 150 steps (state dict)."""
    from transformers import set_seed

    torch.set_num_threads(1)
    set_seed(0)
    tokenizer = EXAMPLE.make_tokenizer()
    rows = EXAMPLE.make_rows()
    model = EXAMPLE.make_model(tokenizer)
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        EXAMPLE.make_trainer(model, tokenizer, rows, rows, None, out, steps=150).train()
    return tokenizer, rows, {k: v.clone() for k, v in model.state_dict().items()}


def _evaluate(setup, tmp_path, metrics_fn, model_hook=None, **arguments):
    tokenizer, rows, state = setup
    model = EXAMPLE.make_model(tokenizer)
    model.load_state_dict(state)
    if model_hook:
        model_hook(model)
    trainer = EXAMPLE.make_trainer(model, tokenizer, rows, rows, metrics_fn, str(tmp_path), steps=0, **arguments)
    return trainer, trainer.evaluate()


def _independent(setup, tmp_path):
    """Captions decoded by hand from trainer.predict (no capeval.hf), one per image, and each image's raw captions."""
    tokenizer, rows, state = setup
    model = EXAMPLE.make_model(tokenizer)
    model.load_state_dict(state)
    trainer = EXAMPLE.make_trainer(model, tokenizer, rows, rows, None, str(tmp_path), steps=0)
    generated = trainer.predict(rows).predictions
    texts = [tokenizer.decode([int(t) for t in row if t >= 0], skip_special_tokens=True).strip() for row in generated]
    first, refs = {}, {}
    for i, row in enumerate(rows):
        first.setdefault(row["image_id"], i)
        refs.setdefault(row["image_id"], []).append(row["caption"])
    return [texts[i] for i in first.values()], list(refs.values()), texts


def test_evaluate_returns_capeval_scores_one_caption_per_image(setup, tmp_path, caplog):
    _, rows, _ = setup
    metrics_fn = compute_metrics(setup[0], metrics=FAST, ids=[r["image_id"] for r in rows])
    with caplog.at_level(logging.INFO, logger="capeval.hf.trainer"):
        _, got = _evaluate(setup, tmp_path, metrics_fn)
    preds, refs, _ = _independent(setup, tmp_path)
    want = capeval.score(preds, refs, metrics=FAST)
    assert len(preds) == 8 and len(set(preds)) > 1  # one caption per image, and the model tells images apart
    for key in KEYS:
        assert isinstance(got[f"eval_{key}"], float) and got[f"eval_{key}"] == pytest.approx(want[key], abs=1e-12)
    assert not any("per_caption" in k or "signature" in k for k in got)  # flat floats only
    assert {k for k in got if isinstance(got[k], str)} == set()
    assert metrics_fn.captions == preds and metrics_fn.signature == want["signature"]
    assert want["signature"].startswith("nrefs:3|")  # all three references of each image
    assert f"signature: {want['signature']}" in caplog.text


def test_references_by_id_or_per_row_give_the_same_scores(setup, tmp_path):
    _, rows, _ = setup
    ids = [r["image_id"] for r in rows]
    by_id = {}
    for r in rows:
        by_id.setdefault(r["image_id"], []).append(r["caption"].capitalize() + ".")  # written as people write them
    from_labels = compute_metrics(setup[0], metrics=FAST, ids=ids)
    mapping = compute_metrics(setup[0], metrics=FAST, references=by_id, ids=ids)
    per_row = compute_metrics(setup[0], metrics=FAST, references=[by_id[i] for i in ids], ids=ids)
    results = [_evaluate(setup, tmp_path, fn)[1] for fn in (from_labels, mapping, per_row)]
    for key in KEYS:
        assert results[0][f"eval_{key}"] == pytest.approx(results[1][f"eval_{key}"], abs=1e-12) == results[2][f"eval_{key}"]


def test_without_ids_every_row_is_scored_against_its_label(setup, tmp_path):
    _, rows, _ = setup
    _, got = _evaluate(setup, tmp_path, compute_metrics(setup[0], metrics="rouge_l"))
    _, _, texts = _independent(setup, tmp_path)
    want = capeval.score(texts, [r["caption"] for r in rows], metrics="rouge_l")
    assert want["signature"].startswith("nrefs:1|")
    assert got["eval_rouge_l"] == pytest.approx(want["rouge_l"], abs=1e-12)


def _only_eos(model):
    """Every generated caption is empty: the first generated token is forced to <eos>."""
    model.generation_config.forced_bos_token_id = model.generation_config.eos_token_id


def test_empty_generated_captions_score_zero_with_a_warning(setup, tmp_path):
    _, rows, _ = setup
    metrics_fn = compute_metrics(setup[0], metrics=FAST, ids=[r["image_id"] for r in rows])
    with pytest.warns(capeval.EmptyCaptionWarning, match=r"8 empty prediction\(s\) scored 0"):
        _, got = _evaluate(setup, tmp_path, metrics_fn, model_hook=_only_eos)
    assert metrics_fn.captions == [""] * 8
    assert [got[f"eval_{k}"] for k in KEYS] == [0.0] * len(KEYS)


def test_empty_error_restores_the_error(setup, tmp_path):
    _, rows, _ = setup
    metrics_fn = compute_metrics(setup[0], metrics=FAST, ids=[r["image_id"] for r in rows], empty="error")
    with pytest.raises(ValueError, match=r"predictions\[0\] is empty"):
        _evaluate(setup, tmp_path, metrics_fn, model_hook=_only_eos)


def test_batch_eval_metrics_gives_the_same_scores(setup, tmp_path):
    _, rows, _ = setup
    ids = [r["image_id"] for r in rows]
    whole = _evaluate(setup, tmp_path, compute_metrics(setup[0], metrics=FAST, ids=ids))[1]
    batched = _evaluate(setup, tmp_path, compute_metrics(setup[0], metrics=FAST, ids=ids), batch_eval_metrics=True)[1]
    for key in KEYS:
        assert batched[f"eval_{key}"] == pytest.approx(whole[f"eval_{key}"], abs=1e-12)


def test_a_wrong_number_of_ids_names_both_counts(setup, tmp_path):
    _, rows, _ = setup
    metrics_fn = compute_metrics(setup[0], metrics=FAST, ids=[r["image_id"] for r in rows][:-1])
    with pytest.raises(ValueError, match=r"the Trainer passed 24 generated captions but ids= has 23 entries"):
        _evaluate(setup, tmp_path, metrics_fn)


# -- without a Trainer: decoding, -100, arguments checked at once ------------------------------------------------


class _EvalPrediction:
    def __init__(self, predictions, label_ids):
        self.predictions, self.label_ids = predictions, label_ids


def test_minus_100_and_padding_are_dropped_before_decoding(setup):
    import numpy as np

    tokenizer = setup[0]
    ids = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    a, b = ids("a red square"), ids("a small blue block")
    preds = np.full((2, 8), -100)
    preds[0, :4] = [tokenizer.bos_token_id, *a]
    preds[1, :5] = [tokenizer.bos_token_id, *b]
    labels = np.full((2, 6), -100)
    labels[0, :4] = [*a, tokenizer.eos_token_id]
    labels[1, :5] = [*b, tokenizer.eos_token_id]
    metrics_fn = compute_metrics(tokenizer, metrics="rouge_l")
    got = metrics_fn(_EvalPrediction((torch.tensor(preds), None), labels))  # a tuple, a tensor: both read
    assert metrics_fn.captions == ["a red square", "a small blue block"]
    assert got == {"rouge_l": 1.0}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"metrics": "blue"}, ValueError, "Unknown metric 'blue'"),
    ({"cider_dff": 1}, ValueError, r"Unknown option\(s\) \['cider_dff'\]"),
    ({"references": {"a": ["x"]}}, ValueError, "references is a mapping by id: also give ids="),
    ({"references": {"a": ["x"]}, "ids": ["a", "b"]}, ValueError, r"1 id\(s\) without references, e.g. \['b'\]"),
    ({"references": [["x"], [None]]}, ValueError, r"references\[1\]\[0\] is None"),
    ({"references": [["x"]], "ids": ["a", "b"]}, ValueError, "references has 1 entries but ids has 2"),
    ({"empty": "skip"}, ValueError, "empty must be one of"),
])
def test_bad_arguments_fail_at_construction(setup, kwargs, error, match):
    with pytest.raises(error, match=match):
        compute_metrics(setup[0], **kwargs)


def test_a_non_tokenizer_is_refused():
    with pytest.raises(TypeError, match="batch_decode"):
        compute_metrics("gpt2")


def test_logits_instead_of_ids_say_predict_with_generate(setup):
    import numpy as np

    with pytest.raises(ValueError, match="predict_with_generate=True"):
        compute_metrics(setup[0])(_EvalPrediction(np.zeros((2, 3, 5), dtype=np.float32), None))


def test_importing_capeval_hf_imports_no_torch_or_transformers():
    code = ("import sys, capeval, capeval.hf\n"
            "from capeval.hf import compute_metrics, CaptionModule\n"
            "print(sorted(m for m in ('torch', 'transformers', 'evaluate', 'datasets') if m in sys.modules))")
    out = run_python(["-c", code])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_example_script_runs_offline(tmp_path):
    out = run_python([str(ROOT / "examples" / "trainer_compute_metrics.py"), "--steps", "10"],
                     env={"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert any(line.startswith("eval_cider_d = ") for line in lines)
    assert any(line.startswith("signature: nrefs:3|") for line in lines), out.stdout
    assert "SmallCorpusWarning" not in out.stderr  # it evaluates on enough images for CIDEr-D's document frequencies

