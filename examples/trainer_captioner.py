"""Fine-tune and evaluate capeval's own captioner inside ``transformers.Seq2SeqTrainer``, scored with capeval.

capeval's shipped Flickr8k captioner (``capeval.captioning.load.load_captioner()``, a transformers
``PreTrainedModel``) reads image features, not pixels: the first ``--max-images`` Flickr8k dev images are encoded
once with the captioner's own image encoder (EfficientNet-Lite0, ``capeval.captioning.load.image_features``;
cached). Half of them are used to fine-tune the captioner for ``--steps`` steps, the other half to evaluate it
before and after, with ``Seq2SeqTrainer(predict_with_generate=True).evaluate()`` and
``capeval.hf.compute_metrics``. The datasets have one caption per row (five rows per image); each image's
generated caption is scored once against its five references, looked up by image id. A few steps on a handful of
images change little: the point is the plumbing, in well under a minute on a CPU. The default 20 images leave 10 to
evaluate on: CIDEr-D takes its document frequencies from the evaluated images' references, which says little below
ten images (capeval's ``SmallCorpusWarning``).

    python examples/trainer_captioner.py [--max-images 20] [--steps 10]

Needs the Flickr8k captions and images: ``$CAPEVAL_DATA_DIR/flickr8k`` (``Flickr8k.token.txt``,
``Flickr_8k.devImages.txt``, ``images-224/``), default ``../shared/data``. Nothing is downloaded.

What the captioner needs in a Trainer (all in :mod:`capeval.models.captioner`): rows with ``image_features`` and
``labels`` (:func:`~capeval.models.caption_tokenizer.caption_labels`), batched by ``CaptionerDataCollator``
(features stacked, labels padded with -100, no ``input_ids``: the model builds them from the labels, and
``generate`` then starts every caption at ``<bos>``).
"""
from __future__ import annotations

import argparse
import tempfile

METRICS = ["bleu", "rouge_l", "cider_d"]  # METEOR and SPICE work too (no Java), but take longer


def make_dataset(tokenizer, features, references, max_words: int = 22):
    """A ``datasets.Dataset`` with one row per (image, caption): ``image_id``, ``caption``, ``image_features``
    (``features[image_id]``, a ``[regions, dim]`` or ``[dim]`` tensor or array) and ``labels`` (the caption's
    token ids after ``<bos>``), in torch format. ``references``: ``{image_id: [captions]}``."""
    import numpy as np
    from datasets import Dataset

    from capeval.models.caption_tokenizer import caption_labels

    ids = [image_id for image_id, captions in references.items() for _ in captions]
    captions = [caption for captions in references.values() for caption in captions]
    return Dataset.from_dict({
        "image_id": ids,
        "caption": captions,
        "image_features": np.stack([np.asarray(features[i], dtype=np.float32) for i in ids]),
        "labels": caption_labels(tokenizer, captions, max_words=max_words),
    }).with_format("torch")


def make_trainer(model, train_dataset, eval_dataset, compute_metrics, output_dir, steps=10, **arguments):
    """A ``Seq2SeqTrainer`` with ``predict_with_generate=True`` on CPU: no logging to files, no checkpoints."""
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    from capeval.models.captioner import CaptionerDataCollator

    settings = {"output_dir": output_dir, "max_steps": steps, "per_device_train_batch_size": 10,
                "per_device_eval_batch_size": 10, "learning_rate": 2e-5, "predict_with_generate": True,
                "use_cpu": True, "report_to": [], "save_strategy": "no", "logging_strategy": "no",
                "eval_strategy": "no", "disable_tqdm": True, "seed": 0, "dataloader_num_workers": 0, **arguments}
    return Seq2SeqTrainer(model=model, args=Seq2SeqTrainingArguments(**settings),
                          data_collator=CaptionerDataCollator(), train_dataset=train_dataset,
                          eval_dataset=eval_dataset, compute_metrics=compute_metrics)


def flickr8k_dev(max_images: int, data_dir=None):
    """``(image folder, {image file: [5 captions]})`` of the first ``max_images`` Flickr8k dev images (sorted)."""
    from pathlib import Path

    from capeval.corpora.captions import flickr8k_captions
    from capeval.paths import data_dir as default_data_dir

    root = Path(data_dir) if data_dir else default_data_dir(required=True)
    references = flickr8k_captions("dev", root)
    names = sorted(references)[:max_images]
    return root / "flickr8k" / "images-224", {name: references[name] for name in names}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-images", type=int, default=20,
                        help="Flickr8k dev images used: the first half fine-tunes, the second half evaluates (20: "
                             "CIDEr-D's document frequencies need at least 10 evaluated images)")
    parser.add_argument("--steps", type=int, default=10, help="fine-tuning steps between the evaluations (10)")
    parser.add_argument("--data-dir", help="folder holding flickr8k/ (default: $CAPEVAL_DATA_DIR or ../shared/data)")
    args = parser.parse_args(argv)
    if args.max_images < 2:
        parser.error("--max-images must be at least 2 (one image to fine-tune on, one to evaluate).")

    import copy
    import logging

    import transformers

    from capeval.captioning.load import image_features, load_captioner
    from capeval.hf import compute_metrics

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("capeval.hf.trainer").setLevel(logging.INFO)  # the signature of every evaluation
    # Seq2SeqTrainer writes max_length/min_length defaults into the model's generation config, after which
    # transformers warns at every batch that max_new_tokens/min_new_tokens take precedence (they do).
    transformers.logging.set_verbosity_error()
    transformers.set_seed(0)

    folder, references = flickr8k_dev(args.max_images, args.data_dir)
    model, tokenizer = load_captioner(device="cpu")  # the shipped one, capeval/pretrained/flickr8k-captioner
    model = copy.deepcopy(model)  # load_captioner keeps the model it returns for later calls: fine-tune a copy
    names = list(references)
    table = image_features(model, [folder / name for name in names], names=names, progress_bar=False)
    features = dict(zip(names, table.rows(names)))
    half = len(names) // 2
    train_refs = {name: references[name] for name in names[:half]}
    eval_refs = {name: references[name] for name in names[half:]}
    train_dataset = make_dataset(tokenizer, features, train_refs)
    eval_dataset = make_dataset(tokenizer, features, eval_refs)
    print(f"{len(train_refs)} images ({len(train_dataset)} rows) to fine-tune on, "
          f"{len(eval_refs)} images ({len(eval_dataset)} rows) to evaluate")

    # the one capeval line: decode, one caption per image id, score against that image's references, floats
    scorer = compute_metrics(tokenizer, metrics=METRICS, references=eval_refs, ids=list(eval_dataset["image_id"]))
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = make_trainer(model, train_dataset, eval_dataset, scorer, output_dir, steps=args.steps)
        results = {"before": trainer.evaluate()}
        if args.steps:
            trainer.train()
            results["after"] = trainer.evaluate()
    for name, caption in list(zip(eval_refs, scorer.captions))[:3]:
        print(f"{name}: {caption!r}")
    for when, metrics in results.items():
        shown = "  ".join(f"{key} = {metrics[key]:.4f}"
                          for key in ("eval_loss", "eval_bleu_4", "eval_rouge_l", "eval_cider_d"))
        print(f"{when} {args.steps if when == 'after' else 0} steps: {shown}")
    print(f"signature: {scorer.signature}")
    return results


if __name__ == "__main__":
    main()
