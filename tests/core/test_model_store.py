"""capeval.model_store: a catalog name becomes a folder (bundled, a local mirror, the Hugging Face cache) or one clear
error naming the Hub repo and the fetch command; ``capeval hub build-model`` writes the repo folder that resolves.

The Hugging Face cache is real: ``models--capeval--<name>/{refs/main, blobs/<sha256>, snapshots/<commit>/<file> ->
../../blobs/<sha256>}``, built in a temporary folder, read by a fresh interpreter with ``HF_HUB_CACHE`` and
``HF_HUB_OFFLINE=1`` (huggingface_hub reads them at import) and no checkout mirror (``CAPEVAL_MODELS_DIR=``).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capeval.catalog import BUNDLED, DEFAULTS, MODELS
from capeval.hub.model_folder import MANIFEST, build_model_folder, check_model_folder, is_model_folder
from capeval.model_store import (ModelNotAvailableError, catalog_name_of, hub_repo_id, mirror_root, model_dir,
                                 resolve)
from support import ROOT

HUB_MODELS = [name for name, m in MODELS.items() if m.location == "hub"]


def _hf_cache(cache: Path, name: str, source: Path, commit: str = "0123456789abcdef0123456789abcdef01234567") -> Path:
    """Lay ``source``'s files out as huggingface_hub caches a download of ``capeval/<name>``; return the snapshot."""
    repo = cache / f"models--capeval--{name}"
    snapshot = repo / "snapshots" / commit
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "blobs").mkdir()
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        data = path.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / path.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot


def _run(code: str, cache: Path, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "CAPEVAL_MODELS_DIR": "", **env}
    full.pop("HF_HOME", None)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=timeout)


def test_every_hub_model_is_in_the_checkout_mirror_and_no_default_is_on_the_hub():
    assert mirror_root() == ROOT / "hub_models"
    assert sorted(p.name for p in (ROOT / "hub_models").iterdir() if p.is_dir()) == sorted(HUB_MODELS)
    for metric, name in DEFAULTS.items():
        assert MODELS[name].location != "hub", (metric, name)
    for name in HUB_MODELS:
        assert model_dir(name) == ROOT / "hub_models" / name and catalog_name_of(model_dir(name)) == name
    for name in BUNDLED:
        assert model_dir(name).parent.name == "pretrained" and catalog_name_of(model_dir(name)) == name


def test_recorded_sizes_match_the_files():
    for name, model in MODELS.items():
        if model.location in ("bundled", "hub"):
            folder = model_dir(name)
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
            assert abs(size / 1e6 - model.size_mb) < 0.01, (name, size / 1e6, model.size_mb)


def test_resolves_from_a_real_hugging_face_cache_offline_and_scores(tmp_path):
    pytest.importorskip("torch")
    cache = tmp_path / "hub"
    snapshot = _hf_cache(cache, "critic-flickr8k-ref", ROOT / "hub_models" / "critic-flickr8k-ref")
    code = (
        "import capeval\n"
        "from capeval.model_store import model_dir, catalog_name_of\n"
        "folder = model_dir('critic-flickr8k-ref')\n"
        "print(folder)\n"
        "print(catalog_name_of(folder))\n"
        "out = capeval.score(['a dog runs on the grass', 'grass the on runs dog a'], [['a dog running on grass']] * 2,"
        " metrics=['critic_ref'], critic_ref_model='critic-flickr8k-ref')\n"
        "print(out['signature'])\n"
        "print(out['per_caption']['critic_ref'])\n"
    )
    out = _run(code, cache)
    assert out.returncode == 0, out.stderr[-3000:]
    folder, name, signature, scores = out.stdout.strip().splitlines()[-4:]
    assert Path(folder) == snapshot and name == "critic-flickr8k-ref"
    assert "model=critic-flickr8k-ref," in signature and str(tmp_path) not in signature
    good, scrambled = json.loads(scores)
    assert 0 <= scrambled < good <= 1


def test_missing_model_offline_fails_fast_naming_the_repo_and_the_fetch_command(tmp_path):
    # fast: no network wait; a hang ends in subprocess.TimeoutExpired (the bound of _run)
    out = _run("from capeval.model_store import model_dir\nmodel_dir('lm-coco')", tmp_path / "empty-hub", timeout=120)
    assert out.returncode == 1 and "ModelNotAvailableError" in out.stderr
    assert "'capeval/lm-coco'" in out.stderr and "capeval models fetch lm-coco" in out.stderr
    cli = subprocess.run([sys.executable, "-m", "capeval", "models", "fetch", "critic-flickr8k"], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "HF_HUB_CACHE": str(tmp_path / "empty-hub"),
                                                      "HF_HUB_OFFLINE": "1", "CAPEVAL_MODELS_DIR": ""})
    assert cli.returncode != 0 and "capeval/critic-flickr8k" in cli.stderr and "Traceback" not in cli.stderr


def test_a_metric_option_naming_a_missing_hub_model_says_how_to_fetch_it(tmp_path):
    code = ("import capeval\n"
            "capeval.score(['a dog'], [['a dog runs']], metrics=['lceval'], lceval_model='lceval-flickr8k-coco')\n")
    out = _run(code, tmp_path / "empty-hub")
    assert out.returncode == 1 and "capeval models fetch lceval-flickr8k-coco" in out.stderr


def test_mirror_folder_is_read_before_the_hub(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    build_model_folder("lceval-released-8010", mirror / "lceval-released-8010")
    monkeypatch.setenv("CAPEVAL_MODELS_DIR", str(mirror))
    assert model_dir("lceval-released-8010") == mirror / "lceval-released-8010"
    assert catalog_name_of(mirror / "lceval-released-8010") == "lceval-released-8010"
    monkeypatch.setenv("CAPEVAL_MODELS_DIR", "")
    assert mirror_root() is None


def test_resolve_takes_folders_and_names_and_refuses_the_rest(tmp_path):
    assert resolve(tmp_path) == tmp_path
    assert resolve("critic-flickr8k-joint") == model_dir("critic-flickr8k-joint")
    with pytest.raises(FileNotFoundError, match="neither a folder nor a model of capeval's catalog"):
        resolve(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="capeval models"):
        resolve("critic-flickr8k-robust")  # retired: not a name that resolves


def test_build_model_writes_a_checked_repo_folder_that_resolves_from_the_cache(tmp_path):
    built = build_model_folder("critic-flickr8k-plus", tmp_path / "critic-flickr8k-plus")
    assert built.repo_id == hub_repo_id("critic-flickr8k-plus") == "capeval/critic-flickr8k-plus"
    assert set(built.files) == {"combiner.json"} and is_model_folder(built.folder)
    card = (built.folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "\nlicense: " in card.split("---", 2)[1]
    assert "<!-- provenance:begin -->" in card and "critic_plus" in card
    manifest = check_model_folder(built.folder)
    assert manifest["name"] == "critic-flickr8k-plus" and manifest["status"] == MODELS["critic-flickr8k-plus"].status
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        build_model_folder("critic-flickr8k-plus", built.folder)
    (built.folder / "combiner.json").write_text("{}")
    with pytest.raises(ValueError, match="combiner.json is missing or changed"):
        check_model_folder(built.folder)
    with pytest.raises(ValueError, match="retired"):
        build_model_folder("critic-flickr8k-hard", tmp_path / "x")
    with pytest.raises(ValueError, match="pypi"):
        build_model_folder("all-minilm-l6-v2", tmp_path / "y")

    lm = build_model_folder("lm-flickr8k", tmp_path / "lm-flickr8k")
    assert {"unigram/unigram.json", "lstm/model.safetensors"} <= set(lm.files)
    snapshot = _hf_cache(tmp_path / "hub", "lm-flickr8k", lm.folder)
    out = _run("from capeval.model_store import model_dir\nprint(model_dir('lm-flickr8k'))", tmp_path / "hub")
    assert out.returncode == 0 and Path(out.stdout.strip()) == snapshot, out.stderr[-2000:]
    assert (snapshot / MANIFEST).is_file() and (snapshot / "lstm" / "config.json").is_file()


def test_cli_build_model_and_push_refuses_a_misnamed_repo(tmp_path, capsys):
    from capeval.cli import main
    from capeval.hub.push import push_model_folder

    assert main(["hub", "build-model", "lceval-released-8010", "--out", str(tmp_path / "m")]) == 0
    assert "capeval hub push" in capsys.readouterr().out
    with pytest.raises(ValueError, match="push it to a repo of that name"):
        push_model_folder(tmp_path / "m", "someone/other-name")
