"""Score an image captioner with capeval inside ``transformers.Seq2SeqTrainer`` — offline, seconds on CPU.

A tiny ``VisionEncoderDecoderModel`` (a ViT encoder and a GPT-2 decoder with cross-attention, random weights,
built from configs) is trained for a few steps on synthetic pictures of coloured squares. The dataset has one
caption per row, three rows per image (COCO has five), and ``Seq2SeqTrainer.evaluate()`` scores the generated
captions with ``capeval.hf.compute_metrics``: one caption per image against all three references of its image.
It evaluates on the training pictures: the point is the plumbing, not generalisation. There are 16 of them (two of
each colour and side): CIDEr-D takes its document frequencies from the evaluated images' references, which says
little below ten images (capeval's ``SmallCorpusWarning``), so evaluate on at least ten.

    python examples/trainer_compute_metrics.py [--steps 150]

With a real model, the only line that matters is the ``compute_metrics=`` one; the tokenizer would come from
``AutoTokenizer.from_pretrained`` (here it is built from a word list, so that nothing is downloaded).
"""
from __future__ import annotations

import argparse
import tempfile

COLOURS = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0), "yellow": (1.0, 1.0, 0.0)}
PLACES = {"left": 0, "right": 16}  # column where the 16x16 square starts in a 32x32 picture
TEMPLATES = ("a {colour} square on the {place}", "a {colour} block on the {place} side", "a small {colour} square")


def make_rows(images_per_combination: int = 1):
    """One row per (image, caption): ``image_id``, ``pixel_values`` (3x32x32 floats), ``caption``."""
    import torch

    rows = []
    for colour, rgb in COLOURS.items():
        for place, column in PLACES.items():
            for k in range(images_per_combination):
                image_id = f"{colour}-{place}-{k}"
                pixels = torch.zeros(3, 32, 32)
                pixels[:, 8:24, column:column + 16] = torch.tensor(rgb)[:, None, None]
                for template in TEMPLATES:
                    rows.append({"image_id": image_id, "pixel_values": pixels,
                                 "caption": template.format(colour=colour, place=place)})
    return rows


def make_tokenizer():
    """A word-level ``PreTrainedTokenizerFast`` (``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3) of the captions."""
    from capeval.models.caption_tokenizer import tokenizer_from_words

    words = sorted({w for t in TEMPLATES for w in t.split() if "{" not in w} | set(COLOURS) | set(PLACES))
    return tokenizer_from_words(words)


def make_model(tokenizer):
    """A ``VisionEncoderDecoderModel`` of about 60k parameters with random weights (seeded by the caller)."""
    from transformers import GPT2Config, ViTConfig, VisionEncoderDecoderConfig, VisionEncoderDecoderModel

    encoder = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64)
    decoder = GPT2Config(vocab_size=len(tokenizer), n_positions=16, n_embd=32, n_layer=1, n_head=2,
                         add_cross_attention=True, is_decoder=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model = VisionEncoderDecoderModel(config=VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder))
    for config in (model.config, model.generation_config):
        config.decoder_start_token_id = tokenizer.bos_token_id
        config.pad_token_id = tokenizer.pad_token_id
        config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.max_length = 10
    model.generation_config.num_beams = 1
    return model


class Collator:
    """Stacks the pictures; labels = caption ids + ``<eos>``, padded with -100 (ignored by the loss)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def __call__(self, rows):
        import torch

        ids = [self.tokenizer(r["caption"], add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
               for r in rows]
        labels = torch.full((len(ids), max(map(len, ids))), -100, dtype=torch.long)
        for i, row in enumerate(ids):
            labels[i, : len(row)] = torch.tensor(row)
        return {"pixel_values": torch.stack([r["pixel_values"] for r in rows]), "labels": labels}


def make_trainer(model, tokenizer, train_rows, eval_rows, compute_metrics, output_dir, steps=150, **arguments):
    """A ``Seq2SeqTrainer`` with ``predict_with_generate=True`` on CPU, no logging to files, no checkpoints."""
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    args = Seq2SeqTrainingArguments(
        output_dir=output_dir, max_steps=steps, per_device_train_batch_size=8, per_device_eval_batch_size=5,
        learning_rate=3e-3, predict_with_generate=True, generation_max_length=10, use_cpu=True, report_to=[],
        save_strategy="no", logging_strategy="no", eval_strategy="no", disable_tqdm=True, seed=0,
        dataloader_num_workers=0, remove_unused_columns=False, **arguments)
    return Seq2SeqTrainer(model=model, args=args, data_collator=Collator(tokenizer), train_dataset=train_rows,
                          eval_dataset=eval_rows, compute_metrics=compute_metrics)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150, help="training steps before the evaluation (default 150)")
    args = parser.parse_args(argv)

    import logging

    import torch
    from transformers import set_seed

    from capeval.hf import compute_metrics

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("capeval.hf.trainer").setLevel(logging.INFO)  # the signature of every evaluation
    torch.set_num_threads(1)  # a model this small only loses time to threads
    set_seed(0)
    tokenizer = make_tokenizer()
    model = make_model(tokenizer)
    rows = make_rows(images_per_combination=2)  # 16 images: CIDEr-D's document frequencies need at least 10
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = make_trainer(
            model, tokenizer, rows, rows, output_dir=output_dir, steps=args.steps,
            # the one capeval line: decode, group the one-caption rows by image, score, return floats
            compute_metrics=compute_metrics(tokenizer, metrics=["bleu", "rouge_l", "cider_d"],
                                            ids=[r["image_id"] for r in rows]))
        if args.steps:
            trainer.train()
        metrics = trainer.evaluate()
    scorer = trainer.compute_metrics
    for image_id, caption in list(zip(dict.fromkeys(r["image_id"] for r in rows), scorer.captions))[:4]:
        print(f"{image_id:>14}: {caption!r}")
    for key in ("eval_bleu_4", "eval_rouge_l", "eval_cider_d"):
        print(f"{key} = {metrics[key]:.4f}")
    print(f"signature: {scorer.signature}")
    return metrics


if __name__ == "__main__":
    main()
