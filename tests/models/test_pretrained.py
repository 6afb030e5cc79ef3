"""capeval's trained models (bundled in ``capeval/pretrained/`` or Hub repos, resolved by :mod:`capeval.model_store`):
present, small, carded, loadable, round-tripping, and trained on training splits only (their vocabularies are rebuilt
from the training captions and compared)."""
from __future__ import annotations

import json

import pytest

from capeval.catalog import MODELS
from capeval.model_store import model_dir as pretrained_dir
from support import ROOT, require_data

#: Every catalog model with files of its own (bundled or a Hub repo).
PRETRAINED = tuple(name for name, m in MODELS.items() if m.location in ("bundled", "hub"))

MAX_FILE_BYTES = 25 * 1024 * 1024


@pytest.mark.parametrize("name", PRETRAINED)
def test_shipped_folder_is_small_and_has_a_model_card(name):
    folder = pretrained_dir(name)
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files, f"{folder} is empty"
    for path in files:
        assert path.stat().st_size <= MAX_FILE_BYTES, f"{path} is larger than 25 MB"
        assert path.suffix not in (".pt", ".bin", ".pkl"), f"{path}: weights must be safetensors"
    card = ROOT / "hub_cards" / "models" / f"{name}.md"
    text = card.read_text(encoding="utf-8")
    assert text.startswith("---\n") and "\nlicense:" in text.split("---", 2)[1]
    assert "## Training" in text and "## Evaluation" in text and "capeval" in text


def test_catalog_name_of_names_only_the_resolved_folders(tmp_path):
    """Logs and signatures name a catalog model by its name, never by this machine's path; a copy elsewhere (even
    under the same folder name) is not the catalog's model."""
    from capeval.model_store import catalog_name_of

    assert catalog_name_of(pretrained_dir("critic-coco-ref")) == "critic-coco-ref"
    assert catalog_name_of(str(pretrained_dir("critic-flickr8k"))) == "critic-flickr8k"
    (tmp_path / "critic-coco-ref").mkdir()
    assert catalog_name_of(tmp_path / "critic-coco-ref") is None and catalog_name_of(tmp_path) is None


def test_unknown_retired_and_pypi_names_are_refused():
    with pytest.raises(KeyError, match="is not a model of capeval's catalog"):
        pretrained_dir("resnet-critic")
    with pytest.raises(ValueError, match="retired"):
        pretrained_dir("critic-flickr8k-robust")
    with pytest.raises(ValueError, match="PyPI package"):
        pretrained_dir("all-minilm-l6-v2")


def test_shipped_captioner_loads_round_trips_and_captions(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from capeval.captioning.load import load_captioner
    from capeval.models.caption_tokenizer import decode_ids
    from capeval.models.captioner import CaptionerForImageCaptioning

    model, tok = load_captioner()
    assert model.config.feature_dim == 1280 and model.config.encoder == "efficientnet-lite0"
    feats = torch.randn(2, 49, 1280, generator=torch.Generator().manual_seed(0))
    before = model.generate(image_features=feats)
    model.save_pretrained(tmp_path)
    again = CaptionerForImageCaptioning.from_pretrained(tmp_path).eval()
    assert torch.equal(again.generate(image_features=feats), before)
    assert all(isinstance(c, str) and c for c in decode_ids(tok, before.tolist()))


def test_shipped_captioner_was_trained_on_flickr8k_train_only():
    pytest.importorskip("transformers")
    require_data("flickr8k", "Flickr_8k.trainImages.txt")
    from capeval.corpora.captions import flickr8k_captions
    from capeval.captioning.load import load_captioner
    from capeval.models.caption_tokenizer import build_caption_tokenizer

    log = json.loads((pretrained_dir("flickr8k-captioner") / "training.json").read_text(encoding="utf-8"))
    train, test = flickr8k_captions("train"), flickr8k_captions("test")
    assert log["train_images"] == len(train) == 6000 and not set(train) & set(test)
    _, tok = load_captioner()
    rebuilt = build_caption_tokenizer([c for caps in train.values() for c in caps], log["options"]["min_count"])
    assert rebuilt.get_vocab() == tok.get_vocab()  # the vocabulary of exactly the train captions


def test_shipped_flickr8k_lms_load_and_match_the_train_vocabulary():
    pytest.importorskip("torch")
    require_data("flickr8k", "Flickr_8k.trainImages.txt")
    from capeval.models.caption_lm import UnigramLM, lm_perplexity
    from capeval.models.lm_loading import load_caption_lm
    from capeval.corpora.captions import corpus_captions

    folder = pretrained_dir("lm-flickr8k")
    unigram, lstm = load_caption_lm(folder / "unigram"), load_caption_lm(folder / "lstm")
    train = corpus_captions("flickr8k-train")
    refit = UnigramLM.fit(train, min_count=5)
    assert refit.vocab.itos == unigram.vocab.itos and refit.counts.tolist() == unigram.counts.tolist()
    assert lstm.vocab.itos == unigram.vocab.itos
    ppl = lm_perplexity(lstm, ["a dog runs through the grass .", "a man in a red shirt is climbing a rock ."])
    assert 1 < ppl < 200


def test_shipped_coco_lms_exclude_every_evaluation_image_and_load():
    pytest.importorskip("torch")
    require_data("coco_karpathy_test", "karpathy_ref.json")
    from capeval.models.caption_lm import lm_perplexity
    from capeval.models.lm_loading import load_caption_lm
    from capeval.corpora.captions import excluded_coco_image_ids

    folder = pretrained_dir("lm-coco")
    subset = json.loads((folder / "training_images.json").read_text(encoding="utf-8"))
    train, dev = set(subset["train_images"]), set(subset["dev_images"])
    assert len(train) == 20000 and len(dev) == 1000 and not train & dev
    for source, ids in excluded_coco_image_ids().items():
        assert not (train | dev) & ids, f"an LM training image is in {source}"
    unigram, lstm = load_caption_lm(folder / "unigram"), load_caption_lm(folder / "lstm")
    assert lstm.vocab.itos == unigram.vocab.itos and lstm.config.tie_weights
    assert 1 < lm_perplexity(lstm, ["a man riding a wave on top of a surfboard ."]) < 500


CRITICS = {"critic-flickr8k": "image+reference", "critic-flickr8k-caption": "image+reference",
           "critic-flickr8k-ref": "reference", "critic-flickr8k-img": "image"}


@pytest.mark.parametrize("name", sorted(CRITICS))
def test_shipped_critics_were_trained_on_flickr8k_train_only(name):
    """The vocabulary is exactly the train captions' (so no dev/test caption entered it), the log says 6,000 training
    images and a held-out test split, and the config is the shipped context."""
    pytest.importorskip("transformers")
    require_data("flickr8k", "Flickr_8k.trainImages.txt")
    from capeval.corpora.captions import flickr8k_captions
    from capeval.critic.loading import load_critic
    from capeval.critic.vocab import CriticVocab

    folder = pretrained_dir(name)
    log = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    train, test = flickr8k_captions("train"), flickr8k_captions("test")
    assert log["train_images"] == len(train) == 6000 and not set(train) & set(test)
    model, vocab = load_critic(folder)
    assert model.config.context == CRITICS[name] and model.dtype == __import__("torch").float32
    rebuilt = CriticVocab.build([c for caps in train.values() for c in caps], log["options"]["max_words"])
    assert rebuilt.words == vocab.words
    assert log["best_epoch"] == max(log["epochs"], key=lambda e: e["dev_s"])["epoch"]


def _flickr8k_train_log(name: str) -> dict:
    """The shipped critic ``name``'s training log, after checking that it read Flickr8k train's 6,000 images and
    that the test split is disjoint from them (skips without transformers or the Flickr8k files)."""
    pytest.importorskip("transformers")
    require_data("flickr8k", "Flickr_8k.trainImages.txt")
    from capeval.corpora.captions import flickr8k_captions

    log = json.loads((pretrained_dir(name) / "training.json").read_text(encoding="utf-8"))
    train, test = flickr8k_captions("train"), flickr8k_captions("test")
    assert log["train_images"] == len(train) == 6000 and not set(train) & set(test)
    return log


def test_shipped_coco_initialised_critic_was_trained_on_flickr8k_train_only():
    """``critic-flickr8k-coco``: an image + reference critic trained on Flickr8k train (6,000 images, the test split
    held out) whose vocabulary, embeddings and LSTM started from ``critic-coco-ref`` (COCO train2014 captions, checked
    below): its vocabulary is exactly that critic's, and dev selected the epoch."""
    from capeval.critic.loading import load_critic

    log = _flickr8k_train_log("critic-flickr8k-coco")
    folder = pretrained_dir("critic-flickr8k-coco")
    assert log["options"]["init_text_from"] == "critic-coco-ref" and log["options"]["init_from"] is None
    model, vocab = load_critic(folder)
    _, coco_vocab = load_critic(pretrained_dir("critic-coco-ref"))
    assert model.config.context == "image+reference" and vocab.words == coco_vocab.words
    assert log["best_epoch"] == max(log["epochs"], key=lambda e: e["dev_s"])["epoch"]
    # resumed from 12 to up to 24 epochs: patience 3 stopped it three epochs after the kept one
    assert log["best_epoch"] == 20 and len(log["epochs"]) == 23 and log["options"]["patience"] == 3


def test_shipped_joint_critic_read_flickr8k_train_images_and_coco_captions_only():
    """``critic-flickr8k-joint``: ``critic-flickr8k-coco`` fine-tuned on Flickr8k train (6,000 images, the test split
    held out) and COCO train2014's captions without images (the corpus of ``critic-coco-ref``, every benchmark image
    left out: the rebuilt corpus has the logged size); Flickr8k dev selected the epoch; it scores without images."""
    torch = pytest.importorskip("torch")
    log = _flickr8k_train_log("critic-flickr8k-joint")
    require_data("composite", "composite_8k.jsonl")
    from capeval.corpora.held_out import benchmark_images
    from capeval.corpora.coco_train2014 import coco_training_corpus
    from capeval.critic.loading import load_critic
    from capeval.critic.scoring import critic_scores

    folder = pretrained_dir("critic-flickr8k-joint")
    assert log["options"]["init_from"] == "critic-flickr8k-coco"
    corpus = coco_training_corpus(benchmark_images(), seed=log["options"]["seed"])
    assert log["text_corpus"]["train_images"] == len(corpus.train) and log["text_corpus"]["dev_images"] == len(corpus.dev)
    model, vocab = load_critic(folder)
    _, base_vocab = load_critic(pretrained_dir("critic-flickr8k-coco"))
    assert model.config.context == "image+reference" and model.config.image_optional and vocab.words == base_vocab.words
    assert log["best_epoch"] == max(log["epochs"], key=lambda e: e["dev_s"])["epoch"]
    # 6 epochs, then resumed to up to 12: patience 2 stopped it two epochs after the kept one
    assert log["best_epoch"] == 8 and len(log["epochs"]) == 10 and log["options"]["patience"] == 2
    cands, refs = ["a dog runs through the grass", "grass the through runs dog a"], [["a brown dog runs"]] * 2
    without = critic_scores(cands, refs, model=model, vocab=vocab)
    feats = torch.randn(2, 1280, generator=torch.Generator().manual_seed(0)).abs()
    assert without[0] > without[1] and critic_scores(cands, refs, image_features=feats, model=model, vocab=vocab)[0] \
        != without[0]


def test_evaluate_system_fine_tunes_a_shipped_image_and_reference_critic_by_default():
    pytest.importorskip("transformers")
    from capeval.critic.loading import critic_folder, load_critic
    from capeval.critic.system_eval import DEFAULT_INIT

    model, _ = load_critic(critic_folder(DEFAULT_INIT))
    assert model.config.context == "image+reference"


def test_shipped_coco_critic_never_read_a_benchmark_image():
    """``critic-coco-ref`` (COCO train2014 captions): its corpus, rebuilt from the log's seed, has the logged size and
    gives exactly the shipped vocabulary; no training or dev image is a reported benchmark's image by file name or by
    Flickr photo id (COCO's flickr_url), and the dev images were never trained on."""
    pytest.importorskip("transformers")
    require_data("composite", "composite_8k.jsonl")
    from capeval.corpora.held_out import benchmark_images
    from capeval.coco.captions import load_coco_annotations
    from capeval.corpora.coco_train2014 import _coco_flickr_ids, coco_training_corpus, flickr_photo_id
    from capeval.critic.loading import load_critic
    from capeval.critic.vocab import CriticVocab

    folder = pretrained_dir("critic-coco-ref")
    log = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    benchmarks = benchmark_images()
    assert {"composite", "flickr8k-expert", "pascal50s"} <= set(benchmarks)
    corpus = coco_training_corpus(benchmarks, seed=log["options"]["seed"])
    assert log["train_images"] == len(corpus.train) > 80_000 and not set(corpus.train) & set(corpus.dev)
    model, vocab = load_critic(folder)
    assert model.config.context == "reference"
    rebuilt = CriticVocab.build([c for caps in corpus.train.values() for c in caps], log["options"]["max_words"])
    assert rebuilt.words == vocab.words
    flickr = _coco_flickr_ids(load_coco_annotations("train2014"))
    used = set(corpus.train) | set(corpus.dev)
    for bench, names in benchmarks.items():
        ids = {flickr_photo_id(n) for n in names} - {None}
        assert not used & set(names), bench
        assert not {flickr.get(n) for n in used} & ids, bench
    assert log["best_epoch"] == max(log["epochs"], key=lambda e: e["dev_s"])["epoch"]


def test_shipped_critic_scores_and_round_trips(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from capeval.critic.model import CriticModel
    from capeval.critic.loading import load_critic
    from capeval.critic.scoring import critic_scores

    model, vocab = load_critic(pretrained_dir("critic-flickr8k"))
    feats = torch.randn(2, 1280, generator=torch.Generator().manual_seed(0)).abs()
    cands, refs = ["a dog runs through the grass", "grass the through runs dog a"], [["a brown dog runs"]] * 2
    before = critic_scores(cands, refs, image_features=feats, model=model, vocab=vocab)
    model.save_pretrained(tmp_path)
    vocab.save(tmp_path)
    again = CriticModel.from_pretrained(tmp_path).eval()
    assert (critic_scores(cands, refs, image_features=feats, model=again, vocab=vocab) == before).all()
    assert ((before > 0) & (before < 1)).all()
