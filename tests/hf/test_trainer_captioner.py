"""``capeval.hf.compute_metrics`` inside a real ``Seq2SeqTrainer.evaluate`` with capeval's own captioner
(``CaptionerForImageCaptioning``, tiny, random weights, random image features, CPU; the dataset and trainer come
from ``examples/trainer_captioner.py``), checked against ``capeval.score`` on captions generated without the
Trainer; the Trainer glue of the captioner (``CaptionerDataCollator``, loss with ``num_items_in_batch``); and the
example with the shipped captioner on a few Flickr8k images when the data is there."""
from __future__ import annotations

import importlib.util

import pytest
from support import ROOT, require_data

import capeval
from capeval.hf import compute_metrics

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("datasets")

from capeval.models.caption_tokenizer import build_caption_tokenizer, decode_ids  # noqa: E402
from capeval.models.captioner import CaptionerConfig, CaptionerForImageCaptioning  # noqa: E402

FAST = "bleu,rouge_l,cider_d"
KEYS = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d"]
REFERENCES = {  # written as people write them; three per image, one per dataset row
    "dog.jpg": ["A dog runs on the grass.", "A brown dog is running.", "The dog runs across a lawn."],
    "cat.jpg": ["A cat sits on a mat.", "A black cat on a red mat.", "The cat is sitting down."],
    "field.jpg": ["Two dogs play in a field.", "Dogs playing in the field.", "Two dogs in a green field."],
    "horse.jpg": ["A man rides a horse.", "A person riding a brown horse.", "The man is on a horse."],
}


def _example():
    spec = importlib.util.spec_from_file_location("trainer_captioner_example",
                                                  ROOT / "examples" / "trainer_captioner.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = _example()


def _tiny(tokenizer):
    torch.manual_seed(0)
    config = CaptionerConfig(vocab_size=len(tokenizer), feature_dim=8, hidden_size=32, num_hidden_layers=1,
                             num_attention_heads=2, intermediate_size=64, dropout=0.0)
    return CaptionerForImageCaptioning(config)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Tokenizer, image features (3 regions of 8 channels per image), the dataset (12 rows: one caption per row,
    3 rows per image) and the state dict of a tiny captioner trained for 60 steps on it."""
    from transformers import set_seed

    torch.set_num_threads(1)
    set_seed(0)
    tokenizer = build_caption_tokenizer([c for refs in REFERENCES.values() for c in refs], min_count=1)
    generator = torch.Generator().manual_seed(0)
    features = {name: torch.randn(3, 8, generator=generator) for name in REFERENCES}
    dataset = EXAMPLE.make_dataset(tokenizer, features, REFERENCES)
    model = _tiny(tokenizer)
    EXAMPLE.make_trainer(model, dataset, dataset, None, str(tmp_path_factory.mktemp("train")), steps=60,
                         learning_rate=1e-2, per_device_train_batch_size=6).train()
    return tokenizer, features, dataset, {k: v.clone() for k, v in model.state_dict().items()}


def _evaluate(setup, tmp_path, metrics_fn, model_hook=None):
    tokenizer, _, dataset, state = setup
    model = _tiny(tokenizer)
    model.load_state_dict(state)
    if model_hook:
        model_hook(model)
    trainer = EXAMPLE.make_trainer(model, dataset, dataset, metrics_fn, str(tmp_path), steps=0,
                                   per_device_eval_batch_size=5)  # batches cut across images
    return trainer.evaluate()


def test_dataset_rows_and_batches(setup):
    tokenizer, _, dataset, _ = setup
    assert len(dataset) == 12 and list(dataset["image_id"][:4]) == ["dog.jpg"] * 3 + ["cat.jpg"]
    row = dataset[0]
    assert row["image_features"].shape == (3, 8)
    assert row["labels"].tolist()[-1] == tokenizer.eos_token_id and tokenizer.bos_token_id not in row["labels"]
    assert decode_ids(tokenizer, [[tokenizer.bos_token_id, *row["labels"].tolist()]]) == ["a dog runs on the grass"]


def test_evaluate_scores_one_generated_caption_per_image_like_capeval_score(setup, tmp_path):
    tokenizer, features, dataset, state = setup
    metrics_fn = compute_metrics(tokenizer, metrics=FAST, references=REFERENCES, ids=list(dataset["image_id"]))
    got = _evaluate(setup, tmp_path, metrics_fn)

    # the same captions without the Trainer: generate from each image's features, starting at <bos>
    model = _tiny(tokenizer)
    model.load_state_dict(state)
    model.eval()
    sequences = model.generate(image_features=torch.stack([features[name] for name in REFERENCES]))
    captions = decode_ids(tokenizer, sequences.tolist())
    want = capeval.score(captions, list(REFERENCES.values()), metrics=FAST)

    assert len(set(captions)) > 1 and all(captions)  # the model tells the images apart
    assert metrics_fn.captions == captions
    assert want["signature"].startswith("nrefs:3|") and metrics_fn.signature == want["signature"]
    assert want["cider_d"] > 0
    for key in KEYS:
        assert isinstance(got[f"eval_{key}"], float)
        assert got[f"eval_{key}"] == pytest.approx(want[key], abs=1e-12)
    assert {k for k in got if not isinstance(got[k], (int, float))} == set()  # flat numbers only
    assert not any("per_caption" in k or "signature" in k for k in got)
    assert got["eval_loss"] > 0  # the Trainer's loss, with input_ids built from the labels


def _only_eos(model):
    """Every generated caption is empty: ``<eos>`` is forced as the first generated token."""
    model.generation_config.min_new_tokens = None
    model.generation_config.forced_bos_token_id = model.config.eos_token_id


def test_empty_generated_captions_score_zero_with_a_warning(setup, tmp_path):
    tokenizer, _, dataset, _ = setup
    metrics_fn = compute_metrics(tokenizer, metrics=FAST, references=REFERENCES, ids=list(dataset["image_id"]))
    with pytest.warns(capeval.EmptyCaptionWarning, match=r"4 empty prediction\(s\) scored 0"):
        got = _evaluate(setup, tmp_path, metrics_fn, model_hook=_only_eos)
    assert metrics_fn.captions == [""] * 4
    assert [got[f"eval_{k}"] for k in KEYS] == [0.0] * len(KEYS)


def test_gradient_accumulation_gives_the_same_step(setup, tmp_path):
    """The Trainer passes ``num_items_in_batch`` and then does not divide the loss by the accumulation steps:
    the captioner's loss must be normalised by it, or accumulated gradients are too large."""
    tokenizer, _, dataset, _ = setup
    six = dataset.select(range(6))
    states = []
    for batch, accumulation in ((6, 1), (3, 2)):
        model = _tiny(tokenizer)
        EXAMPLE.make_trainer(model, six, six, None, str(tmp_path / str(batch)), steps=1, optim="sgd",
                             learning_rate=1.0, per_device_train_batch_size=batch,
                             gradient_accumulation_steps=accumulation).train()
        states.append(model.state_dict())
    start = _tiny(tokenizer).state_dict()
    assert not torch.equal(states[0]["lm_head.weight"], start["lm_head.weight"])
    for key in start:
        assert torch.allclose(states[0][key], states[1][key], atol=1e-5), key


@pytest.mark.data
def test_the_example_runs_on_flickr8k_images(capsys):
    """The example's ``main`` in this process (the imports are paid already): 4 dev images, 1 step."""
    import logging

    import transformers

    require_data("flickr8k", "Flickr_8k.devImages.txt")
    root = require_data("flickr8k", "images-224").parents[1]
    verbosity, level = transformers.logging.get_verbosity(), logging.getLogger("capeval.hf.trainer").level
    try:
        results = EXAMPLE.main(["--max-images", "4", "--steps", "1", "--data-dir", str(root)])
    finally:
        transformers.logging.set_verbosity(verbosity)
        logging.getLogger("capeval.hf.trainer").setLevel(level)
    lines = capsys.readouterr().out.splitlines()
    assert "2 images (10 rows) to fine-tune on, 2 images (10 rows) to evaluate" in lines
    assert any(line.startswith("before 0 steps: eval_loss = ") and "eval_cider_d = " in line for line in lines)
    assert any(line.startswith("after 1 steps: ") for line in lines)
    assert any(line.startswith("signature: nrefs:5|") for line in lines)
    assert set(results) == {"before", "after"} and results["before"]["eval_cider_d"] > 0


def test_the_default_evaluates_on_enough_images_for_cider_d(capsys):
    """The example's default run evaluates on at least the images CIDEr-D's own document frequencies need, so it does
    not trigger the SmallCorpusWarning that capeval gives below them."""
    import re

    from capeval.coco.cider import MIN_DF_DOCUMENTS

    with pytest.raises(SystemExit):
        EXAMPLE.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    default = int(re.search(r"the second half evaluates \((\d+)", text).group(1))
    assert default - default // 2 >= MIN_DF_DOCUMENTS
