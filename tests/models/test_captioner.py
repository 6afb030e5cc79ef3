"""The captioner as a transformers model: tokenizer, generate (beam, sampling), log P(s|I), save/load, bad input.
Tiny random models only; each test takes well under a second or two."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from capeval.models.caption_tokenizer import (  # noqa: E402
    build_caption_tokenizer,
    caption_labels,
    decode_ids,
    encode_captions,
    normalise_captions,
)
from capeval.models.captioner import (  # noqa: E402
    CaptionerConfig,
    CaptionerDataCollator,
    CaptionerForImageCaptioning,
    pad_batch,
)

CAPTIONS = ["A dog runs on the grass.", "A cat sits on a mat.", "Two dogs play in a field.",
            "A man rides a horse.", "A dog jumps."] * 2


def tiny(tok, feature_dim: int = 12, seed: int = 0, **kw) -> CaptionerForImageCaptioning:
    torch.manual_seed(seed)
    cfg = CaptionerConfig(vocab_size=len(tok), feature_dim=feature_dim, hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=32, dropout=0.0, **kw)
    return CaptionerForImageCaptioning(cfg).eval()


@pytest.fixture(scope="module")
def tok():
    return build_caption_tokenizer(CAPTIONS, min_count=2)


def test_tokenizer_ids_specials_and_unknown_words(tok):
    assert tok.convert_ids_to_tokens([0, 1, 2, 3]) == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert tok.convert_ids_to_tokens(4) == "a"  # the most frequent word comes first
    ids = encode_captions(tok, ["A dog, flies!"])[0]
    assert ids[0] == 1 and ids[-1] == 2
    assert tok.convert_ids_to_tokens(ids[1:-1]) == ["a", "dog", "<unk>"]  # 'flies' was never seen
    assert decode_ids(tok, [ids + [0, 0]]) == ["a dog"]  # unknown word dropped as a special token
    assert normalise_captions(["A Dog's toy."]) == ["a dog 's toy"]


def test_tokenizer_save_load_round_trip(tok, tmp_path):
    from transformers import AutoTokenizer

    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again.get_vocab() == tok.get_vocab()
    assert encode_captions(again, CAPTIONS) == encode_captions(tok, CAPTIONS)


def test_tokenizer_refuses_bad_input():
    with pytest.raises(ValueError, match="min_count"):
        build_caption_tokenizer(CAPTIONS, min_count=0)
    with pytest.raises(ValueError, match="not one string"):
        normalise_captions("a dog")
    with pytest.raises(ValueError, match=r"captions\[1\]"):
        normalise_captions(["a dog", None])


def test_beam_sequences_scores_are_log_p_of_the_caption(tok):
    model = tiny(tok)
    feats = torch.randn(2, 12, 3, 3)
    out = model.generate(image_features=feats, num_beams=4, num_return_sequences=3, output_scores=True,
                         return_dict_in_generate=True, max_new_tokens=6)
    assert out.sequences.shape[0] == 6 and out.sequences_scores.shape == (6,)
    seqs = [s[:s.index(2, 1) + 1] if 2 in s[1:] else s for s in out.sequences.tolist()]
    teacher = model.caption_log_probs(seqs, image_features=feats.repeat_interleave(3, 0))
    assert torch.allclose(teacher, out.sequences_scores, atol=1e-4)
    assert (out.sequences_scores <= 0).all()
    # beams come best first within each image
    assert out.sequences_scores[0] >= out.sequences_scores[1] >= out.sequences_scores[2]


def test_cache_and_no_cache_give_the_same_captions(tok):
    model = tiny(tok, seed=3)
    feats = torch.randn(3, 12)
    with_cache = model.generate(image_features=feats, num_beams=3, max_new_tokens=7)
    without = model.generate(image_features=feats, num_beams=3, max_new_tokens=7, use_cache=False)
    assert torch.equal(with_cache, without)


def test_feature_layouts_agree(tok):
    model = tiny(tok)
    grid = torch.randn(2, 12, 2, 2)
    regions = grid.flatten(2).transpose(1, 2)
    assert torch.allclose(model.encode_images(grid), model.encode_images(regions))
    assert model.encode_images(torch.randn(2, 12)).shape == (2, 4, 2, 16)  # 1 region + the mean


def test_sampling_is_seeded(tok):
    model = tiny(tok)
    feats = torch.randn(2, 12)
    runs = []
    for _ in range(2):
        torch.manual_seed(7)
        runs.append(model.generate(image_features=feats, do_sample=True, num_beams=1, length_penalty=None,
                                   top_k=0, num_return_sequences=4, max_new_tokens=6))
    assert torch.equal(runs[0], runs[1]) and runs[0].shape[0] == 8


def test_save_pretrained_round_trip_and_auto_classes(tok, tmp_path):
    from transformers import AutoModelForCausalLM

    model = tiny(tok)
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    again = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(again, CaptionerForImageCaptioning)
    feats = torch.randn(2, 12)
    assert torch.equal(again.generate(image_features=feats, max_new_tokens=5),
                       model.generate(image_features=feats, max_new_tokens=5))
    assert again.generation_config.length_penalty == 0.0 and again.generation_config.num_beams == 3


def test_loss_ignores_padding(tok):
    model = tiny(tok)
    ids = encode_captions(tok, ["a dog runs", "a cat sits on a mat"])
    inputs, targets = pad_batch(ids, tok.pad_token_id)
    assert (targets == -100).sum() == 3 and inputs[0, -1] == 0
    out = model(input_ids=inputs, image_features=torch.randn(2, 12), labels=targets)
    lp = model.caption_log_probs(ids, image_features=torch.zeros(2, 12))
    assert out.loss.item() > 0 and lp.shape == (2,)


def test_trainer_batches_labels_only_give_the_teacher_forcing_loss(tok):
    """CaptionerDataCollator: features stacked, labels padded with -100, no input_ids; forward builds them."""
    import numpy as np

    model = tiny(tok)
    captions = ["a dog runs", "a cat sits on a mat"]
    labels = caption_labels(tok, captions)
    assert labels == [ids[1:] for ids in encode_captions(tok, captions)]
    feats = torch.randn(2, 5, 12)
    rows = [{"image_features": feats[0].tolist(), "labels": labels[0], "image_id": "a.jpg", "caption": "x"},
            {"image_features": np.asarray(feats[1]), "labels": torch.tensor(labels[1])}]
    batch = CaptionerDataCollator()(rows)
    assert sorted(batch) == ["image_features", "labels"]  # other keys left out
    assert batch["image_features"].dtype == torch.float32 and torch.equal(batch["image_features"], feats)
    assert batch["labels"].tolist()[0] == labels[0] + [-100] * 3 and batch["labels"].tolist()[1] == labels[1]
    inputs, targets = pad_batch(encode_captions(tok, captions), tok.pad_token_id)
    assert torch.equal(targets, batch["labels"])
    want = model(input_ids=inputs, image_features=feats, labels=targets)
    got = model(**batch)
    assert torch.allclose(got.logits, want.logits) and torch.allclose(got.loss, want.loss)
    # the Trainer's num_items_in_batch: summed cross-entropy over it (same as the mean when it counts this batch)
    n = int((targets != -100).sum())
    assert torch.allclose(model(**batch, num_items_in_batch=n).loss, want.loss)
    assert torch.allclose(model(**batch, num_items_in_batch=torch.tensor(2 * n)).loss, want.loss / 2)
    assert "labels" not in CaptionerDataCollator()([{"image_features": feats[0]}])
    with pytest.raises(ValueError, match="Some rows have labels"):
        CaptionerDataCollator()([rows[0], {"image_features": feats[1]}])
    # Seq2SeqTrainer hands generate the whole batch: teacher-forcing input_ids with labels are refused
    with pytest.raises(ValueError, match="continue the teacher-forcing inputs"):
        model.generate(input_ids=inputs, image_features=feats, labels=targets)
    out = model.generate(**batch, num_beams=1, max_new_tokens=3)  # labels alone are fine: generation from <bos>
    assert out.shape[0] == 2 and (out[:, 0] == tok.bos_token_id).all()


def test_bad_inputs_raise_clear_errors(tok):
    model = tiny(tok)
    with pytest.raises(ValueError, match="channels"):
        model.encode_images(torch.randn(1, 5))
    with pytest.raises(ValueError, match="NaN"):
        model.encode_images(torch.full((1, 12), float("nan")))
    with pytest.raises(ValueError, match="dimensions"):
        model.encode_images(torch.randn(12))
    with pytest.raises(ValueError, match="image_features"):
        model.generate()
    with pytest.raises(ValueError, match="input_ids .* or labels"):
        model(image_features=torch.randn(1, 12))
    with pytest.raises(ValueError, match="2 captions but 1 images"):
        model.caption_log_probs([[1, 4, 2], [1, 2]], image_features=torch.randn(1, 12))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(input_ids=torch.ones(1, 50, dtype=torch.long), image_features=torch.randn(1, 12))
    with pytest.raises(ValueError, match="<bos> and <eos>"):
        pad_batch([[1]], 0)
    with pytest.raises(ValueError, match="divisible"):
        CaptionerConfig(hidden_size=10, num_attention_heads=4)


def test_generated_captions_never_hold_unk_and_never_are_empty(tok):
    model = tiny(tok, seed=5)
    # make <unk> and an immediate <eos> the most likely tokens: the constraints must still win
    with torch.no_grad():
        model.lm_head.weight[3] += 5.0
        model.lm_head.weight[2] += 5.0
    feats = torch.randn(4, 12)
    beams = model.generate(image_features=feats, num_beams=3, num_return_sequences=3, max_new_tokens=6)
    torch.manual_seed(0)
    samples = model.generate(image_features=feats, do_sample=True, num_beams=1, length_penalty=None, top_k=0,
                             num_return_sequences=3, max_new_tokens=6)
    for seqs in (beams, samples):
        assert not (seqs[:, 1:] == 3).any()
        assert (seqs[:, 1] > 3).all()  # a word right after <bos>
