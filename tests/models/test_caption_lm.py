"""Caption language models P(s): tokenisation, unigram, LSTM (save/load, training, resume), interpolation,
the transformers adapter and perplexity. Tiny random models only; each test takes seconds."""
from __future__ import annotations

import math

import numpy as np
import pytest

from capeval.models.caption_lm import (
    EOS,
    InterpolatedLM,
    UnigramLM,
    Vocabulary,
    caption_tokens,
    combine,
    lm_perplexity,
    perplexity,
)
from capeval.models.lm_loading import load_caption_lm

CAPTIONS = [
    "A dog runs on the grass.", "A dog plays with a ball.", "Two dogs run in a field.",
    "A man rides a horse.", "A woman rides a bike.", "A cat sits on a mat.",
    "A child plays in the park.", "The dog is running.", "A black dog jumps.", "A man walks a dog.",
] * 5  # 50 tiny captions


def test_caption_tokens_are_ptb_lowercase_without_punctuation_plus_eos():
    assert caption_tokens(["A Dog, runs!"]) == [["a", "dog", "runs", EOS]]


def test_vocabulary_min_count_and_unk():
    vocab = Vocabulary.build([["a", "a", "b", EOS]], min_count=2)
    assert vocab.itos == ["<unk>", EOS, "a"]
    assert vocab.encode(["a", "b", EOS]) == [2, 0, 1]
    assert Vocabulary.from_json(vocab.to_json()).itos == vocab.itos


def test_unigram_hand_computed(tmp_path):
    lm = UnigramLM.fit(["a a b", "a"], k=1.0)  # tokens: a a b <eos> a <eos>; V = unk, eos, a, b
    # counts: unk 0, eos 2, a 3, b 1; N = 6; P(w) = (c + 1) / (6 + 4)
    expected = math.log(4 / 10) + math.log(3 / 10)  # "a" + <eos>
    assert lm.log_prob(["a"])[0] == pytest.approx(expected)
    assert lm.log_prob(["zebra"])[0] == pytest.approx(math.log(1 / 10) + math.log(3 / 10))
    assert np.exp(lm.table).sum() == pytest.approx(1.0)
    lm.save(tmp_path / "uni")
    again = load_caption_lm(tmp_path / "uni")
    assert isinstance(again, UnigramLM) and again.log_prob(["a b"]) == pytest.approx(lm.log_prob(["a b"]))
    assert "k=1" in lm.settings


def test_bad_captions_name_the_item():
    lm = UnigramLM.fit(["a b"])
    with pytest.raises(ValueError, match=r"captions\[1\]"):
        lm.log_prob(["a", None])


def test_perplexity_formula():
    assert perplexity([math.log(0.5), math.log(0.25)], [1, 2]) == pytest.approx(math.exp(-math.log(0.125) / 3))
    lm = UnigramLM.fit(["a b"])
    assert lm_perplexity(lm, ["a b"]) == pytest.approx(math.exp(-lm.log_prob(["a b"])[0] / 3))
    with pytest.raises(ValueError):
        perplexity([], [])


def test_interpolation_is_log_linear():
    uni = UnigramLM.fit(["a a b"])
    other = UnigramLM.fit(["b b a"])
    lp = InterpolatedLM(uni, other, 0.3).log_prob(["a b"])
    assert lp == pytest.approx(0.3 * uni.log_prob(["a b"]) + 0.7 * other.log_prob(["a b"]))
    assert combine([1.0], [3.0], 0.25) == pytest.approx([2.5])
    with pytest.raises(ValueError, match="alpha"):
        InterpolatedLM(uni, other, 1.5)


# ---------------------------------------------------------------- torch


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _tiny_config():
    return {"embedding_dim": 16, "hidden_size": 24}


@pytest.mark.parametrize("tied", [False, True])
def test_lstm_save_load_round_trip_and_normalised(torch, tmp_path, tied):
    from capeval.models.lstm_lm import LSTMConfig, LSTMLanguageModel

    torch.manual_seed(0)
    vocab = Vocabulary.build(caption_tokens(CAPTIONS))
    model = LSTMLanguageModel(LSTMConfig(len(vocab), tie_weights=tied, **_tiny_config()), vocab)
    lp = model.log_prob(["a dog runs", "a cat"])
    assert lp.shape == (2,) and (lp < 0).all()
    model.save_pretrained(tmp_path / "lstm")
    again = load_caption_lm(tmp_path / "lstm")
    assert type(again).__name__ == "LSTMLanguageModel"
    assert again.log_prob(["a dog runs", "a cat"]) == pytest.approx(lp)
    # the next-token distribution sums to 1 over the vocabulary
    inputs, targets, mask = model.batch_tensors([[2]])
    assert torch.softmax(model(inputs), -1).sum().item() == pytest.approx(1.0, abs=1e-5)
    # log P(s) equals the sum of the per-step log-probs (a batch of one vs a padded batch)
    assert model.log_prob(["a dog runs"])[0] == pytest.approx(lp[0], abs=1e-5)


def test_default_lstm_is_the_papers_size(torch):
    from capeval.models.lstm_lm import LSTMConfig

    c = LSTMConfig(vocab_size=10)
    assert (c.embedding_dim, c.hidden_size, c.num_layers) == (300, 512, 1)


def test_training_loss_decreases_resumes_and_is_seeded(torch, tmp_path):
    from capeval.models.lstm_train import train_lstm_lm

    kw = dict(dev_captions=CAPTIONS[:10], batch_size=8, lr=0.01, seed=3, min_count=1, config=_tiny_config(),
              progress_bar=False)
    log = train_lstm_lm(CAPTIONS, tmp_path / "a", epochs=2, **kw)
    losses = [e["train_loss"] for e in log["epochs"]]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert log["epochs"][1]["dev_ppl"] < log["epochs"][0]["dev_ppl"]
    assert (tmp_path / "a" / "checkpoints" / "epoch-2" / "model.safetensors").is_file()
    # resume: one epoch, then continue to two == two epochs straight
    train_lstm_lm(CAPTIONS, tmp_path / "b", epochs=1, **kw)
    resumed = train_lstm_lm(CAPTIONS, tmp_path / "b", epochs=2, **kw)
    assert [e["epoch"] for e in resumed["epochs"]] == [1, 2]
    a, b = load_caption_lm(tmp_path / "a"), load_caption_lm(tmp_path / "b")
    for (name, wa), wb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.allclose(wa, wb, atol=1e-6), name
    # same seed, fresh run -> same weights
    train_lstm_lm(CAPTIONS, tmp_path / "c", epochs=2, **kw)
    c = load_caption_lm(tmp_path / "c")
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), c.state_dict().values()))


def test_early_stopping_on_dev_perplexity(torch, tmp_path):
    from capeval.models.lstm_train import train_lstm_lm

    # a huge learning rate makes the dev perplexity (unseen words) worse after the first epoch
    log = train_lstm_lm(CAPTIONS, tmp_path, dev_captions=["zebra giraffe"], epochs=6, batch_size=4, lr=1.0,
                        min_count=1, patience=1, config=_tiny_config(), progress_bar=False)
    assert [e["epoch"] for e in log["epochs"]] == [1, 2] and log["best_epoch"] == 1
    assert log["epochs"][1]["dev_ppl"] > log["epochs"][0]["dev_ppl"] == log["best_dev_ppl"]
    best, first = load_caption_lm(tmp_path), load_caption_lm(tmp_path / "checkpoints" / "epoch-1")
    assert all(torch.equal(x, y) for x, y in zip(best.state_dict().values(), first.state_dict().values()))


def _tiny_gpt2(torch):
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<eos>", "<unk>", "a", "dog", "runs", "cat", "sits", "man"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf_tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=len(words), n_layer=1, n_head=2, n_embd=32, n_positions=32,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg), hf_tok


def test_transformers_adapter_sums_token_log_probs(torch):
    from capeval.models.caption_lm import TransformersCausalLM

    model, tok = _tiny_gpt2(torch)
    lm = TransformersCausalLM(model, tok, batch_size=2)
    caps = ["A dog runs.", "a cat sits", "man"]
    lp = lm.log_prob(caps)
    assert lm.token_counts(caps).tolist() == [4, 4, 2]
    # by hand for the first caption: <eos> a dog runs <eos>
    ids = torch.tensor([[0, 2, 3, 4, 0]])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits, -1)[0]
    expected = sum(logp[t, ids[0, t + 1]].item() for t in range(4))
    assert lp[0] == pytest.approx(expected, abs=1e-5)
    # batching/padding does not change the result
    assert lm.log_prob(caps[::-1])[::-1] == pytest.approx(lp, abs=1e-5)
    assert lm.name.startswith("hf:")


def test_interpolated_and_transformers_folders_load(torch, tmp_path):
    from capeval.models.lstm_lm import LSTMConfig, LSTMLanguageModel

    uni = UnigramLM.fit(CAPTIONS)
    torch.manual_seed(1)
    lstm = LSTMLanguageModel(LSTMConfig(len(uni.vocab), **_tiny_config()), uni.vocab)
    InterpolatedLM(uni, lstm, 0.4).save(tmp_path / "interp")
    again = load_caption_lm(tmp_path / "interp")
    assert isinstance(again, InterpolatedLM) and again.alpha == 0.4
    expected = 0.4 * uni.log_prob(["a dog"]) + 0.6 * lstm.log_prob(["a dog"])
    assert again.log_prob(["a dog"]) == pytest.approx(expected, abs=1e-5)
    model, tok = _tiny_gpt2(torch)
    model.save_pretrained(tmp_path / "gpt2")
    tok.save_pretrained(tmp_path / "gpt2")
    from capeval.models.caption_lm import TransformersCausalLM

    hf = load_caption_lm(tmp_path / "gpt2")
    assert hf.log_prob(["a dog runs"]) == pytest.approx(TransformersCausalLM(model, tok).log_prob(["a dog runs"]), abs=1e-5)
    with pytest.raises(FileNotFoundError):
        load_caption_lm(tmp_path / "missing")
