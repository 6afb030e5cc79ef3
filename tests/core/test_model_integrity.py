"""A damaged catalog model gives one error naming the file, never a wrong number (model caches):
the manifest of the published files' SHA-256 against the files, and the Hugging Face cache's own blob names."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from capeval import model_integrity
from capeval.model_integrity import DamagedModelError, folder_hashes, manifest, source_folders, verify_model_folder
from capeval.model_store import model_dir


def test_the_manifest_matches_the_files_of_this_tree():
    folders = source_folders()
    assert {"critic-flickr8k-joint", "critic-flickr8k-ref", "lceval-released-9990"} <= set(folders)
    assert set(manifest()) == set(folders), "run: python -m capeval.model_integrity write"
    for name, folder in folders.items():
        assert manifest()[name] == folder_hashes(folder), f"{name}: run python -m capeval.model_integrity write"
    assert all("model.safetensors" in files for name, files in manifest().items() if name.startswith("critic-")
               and name != "critic-flickr8k-plus")  # a stack holds no weights of its own


def _mirror(tmp_path, monkeypatch, name="critic-flickr8k-ref") -> Path:
    folder = tmp_path / "mirror" / name
    shutil.copytree(source_folders()[name], folder)
    monkeypatch.setenv("CAPEVAL_MODELS_DIR", str(tmp_path / "mirror"))
    return folder


def test_damage_in_the_middle_of_the_weights_is_refused(tmp_path, monkeypatch):
    folder = _mirror(tmp_path, monkeypatch)
    assert model_dir("critic-flickr8k-ref") == folder  # intact: resolved
    weights = folder / "model.safetensors"
    with weights.open("r+b") as handle:
        handle.seek(weights.stat().st_size // 2)
        handle.write(os.urandom(4096))
    with pytest.raises(DamagedModelError) as err:
        model_dir("critic-flickr8k-ref")
    message = str(err.value)
    assert "\n" not in message and str(weights) in message and "damaged" in message
    assert "capeval models fetch critic-flickr8k-ref" in message


def test_a_missing_file_is_refused(tmp_path, monkeypatch):
    folder = _mirror(tmp_path, monkeypatch)
    (folder / "vocab.json").unlink()
    with pytest.raises(DamagedModelError, match="vocab.json is missing"):
        model_dir("critic-flickr8k-ref")


def test_a_card_or_training_record_may_differ(tmp_path, monkeypatch):
    folder = _mirror(tmp_path, monkeypatch)
    (folder / "README.md").write_text("a card rewritten at upload\n")
    (folder / "training.json").write_text("{}\n")
    assert model_dir("critic-flickr8k-ref") == folder


def _hub_snapshot(tmp_path, content: bytes, blob_name: str) -> Path:
    blobs = tmp_path / "models--capeval--x" / "blobs"
    snapshot = tmp_path / "models--capeval--x" / "snapshots" / "abc"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (blobs / blob_name).write_bytes(content)
    (snapshot / "model.safetensors").symlink_to(os.path.relpath(blobs / blob_name, snapshot))
    return snapshot


@pytest.mark.parametrize("kind", ["lfs", "git"])
def test_hub_cache_blobs_are_checked_against_their_names(tmp_path, kind):
    content = b"weights" * 1000
    if kind == "lfs":
        name = hashlib.sha256(content).hexdigest()
    else:
        name = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    snapshot = _hub_snapshot(tmp_path, content, name)
    verify_model_folder("not-in-the-manifest", snapshot)  # intact
    blob = tmp_path / "models--capeval--x" / "blobs" / name
    blob.write_bytes(content[:-1] + b"X")  # same size, one byte changed (an interrupted or damaged download)
    with pytest.raises(DamagedModelError, match="differs from the Hub's"):
        verify_model_folder("not-in-the-manifest", snapshot)


def test_hashes_are_computed_once_per_file_state(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10)
    first = model_integrity.sha256_of(path)
    opened = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append(self) or real_open(self, *a, **k))
    assert model_integrity.sha256_of(path) == first and opened == []  # kept
    path.write_bytes(b"y" * 11)
    assert model_integrity.sha256_of(path) == hashlib.sha256(b"y" * 11).hexdigest() and opened  # a new state: read
