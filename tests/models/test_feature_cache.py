"""The feature cache: hits, invalid entries recomputed, atomic writes under concurrency and kill -9, weights swapped
under one name, a read-only cache folder."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("timm")
pytest.importorskip("safetensors")
from support import python_env, run_python  # noqa: E402
from support.images import random_rgb, write_pngs  # noqa: E402

from capeval.models.feature_cache import STALE_SECONDS, FeatureCache  # noqa: E402
from capeval.models.image_encoder import load_image_encoder  # noqa: E402

TINY = "test_efficientnet"


@pytest.fixture
def encoder(tmp_path):
    return load_image_encoder(TINY, pretrained=False, cache_root=tmp_path / "cache")


def entries(enc):
    return sorted(enc._cache.dir.glob("*/*.safetensors"))


def test_second_call_reads_the_cache(encoder, tmp_path, monkeypatch):
    paths = write_pngs(tmp_path / "img", 3)
    first = encoder.encode(paths)
    assert len(entries(encoder)) == 3
    assert (encoder._cache.dir / "settings.txt").read_text().strip() == encoder.settings
    monkeypatch.setattr(encoder, "forward", lambda *a, **k: pytest.fail("recomputed a cached image"))
    assert torch.equal(encoder.encode(paths), first)
    assert torch.equal(encoder.encode(list(reversed(paths))), first.flip(0))


def test_kinds_and_settings_have_separate_entries(encoder, tmp_path):
    encoder.encode([random_rgb(0)])
    encoder.encode([random_rgb(0)], kind="grid")
    assert sorted(p.name.split(".")[1] for p in entries(encoder)) == ["grid", "pooled"]
    other = load_image_encoder(TINY, 160, pretrained=False, cache_root=tmp_path / "cache")
    assert other._cache.dir != encoder._cache.dir


def test_cache_off_neither_reads_nor_writes(encoder):
    encoder.encode([random_rgb(0)], cache=False)
    assert entries(encoder) == []


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "wrong_shape", "wrong_key", "nan"])
def test_invalid_entries_are_deleted_and_recomputed(encoder, damage):
    image = random_rgb(1)
    good = encoder.encode([image])
    (path,) = entries(encoder)
    key = path.name.split(".")[0]
    cache = encoder._cache
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 50)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "wrong_shape":
        cache.put(key, "pooled", torch.zeros(7))
    elif damage == "wrong_key":
        FeatureCache("other settings", cache.dir.parent).put(key, "pooled", good[0])
        other = FeatureCache("other settings", cache.dir.parent).path(key, "pooled")
        path.write_bytes(other.read_bytes())
    elif damage == "nan":
        cache.put(key, "pooled", torch.full((256,), float("nan")))
    with pytest.warns(RuntimeWarning, match="removing invalid entry"):
        again = encoder.encode([image])
    assert torch.equal(again, good)
    assert cache.get(key, "pooled") is not None  # rewritten, valid


def test_stale_temporary_files_are_removed(encoder, tmp_path):
    cache = encoder._cache
    cache._tmp.mkdir(parents=True)
    old, fresh = cache._tmp / "old.pooled.1.x.tmp", cache._tmp / "fresh.pooled.2.y.tmp"
    old.write_bytes(b"partial")
    fresh.write_bytes(b"being written")
    os.utime(old, (time.time() - STALE_SECONDS - 60,) * 2)
    encoder.encode([random_rgb(0)])
    assert not old.exists() and fresh.exists()


KILLED_WRITER = """
import os, signal, sys
import numpy as np
from capeval.models.feature_cache import FeatureCache
from capeval.models.image_encoder import load_image_encoder

def half_then_die(tmp, data):
    with open(tmp, "xb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
    os.kill(os.getpid(), signal.SIGKILL)

FeatureCache._write = staticmethod(half_then_die)
enc = load_image_encoder("test_efficientnet", pretrained=False, cache_root=sys.argv[1])
enc.encode([np.full((32, 32, 3), 7, np.uint8)])
"""


def test_kill_9_mid_write_leaves_no_entry(encoder, tmp_path):
    out = run_python(["-c", KILLED_WRITER, str(tmp_path / "cache")])
    assert out.returncode == -signal.SIGKILL, out.stderr
    assert entries(encoder) == []  # nothing half-written in place
    assert len(list(encoder._cache._tmp.glob("*.tmp"))) == 1  # only a temporary file, removed once stale
    image = random_rgb(0)[:32, :32] * 0 + 7
    assert encoder.encode([image]).shape == (1, 256) and len(entries(encoder)) == 1


CONCURRENT_WRITER = """
import sys, time
import torch
from capeval.models.feature_cache import FeatureCache
cache = FeatureCache("concurrency test", sys.argv[1])
value = torch.arange(1000, dtype=torch.float32) * float(sys.argv[2])
deadline = time.time() + float(sys.argv[3])
n = 0
while time.time() < deadline:
    cache.put("ab" * 32, "pooled", value)
    n += 1
print(n)
"""


def test_concurrent_writers_of_one_key_never_expose_a_partial_entry(tmp_path):
    writers = [subprocess.Popen([sys.executable, "-c", CONCURRENT_WRITER, str(tmp_path), str(scale), "2"], env=python_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for scale in (1, 2)]
    cache = FeatureCache("concurrency test", tmp_path)
    reads = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading a partial entry would warn "removing invalid entry"
        while any(w.poll() is None for w in writers):
            got = cache.get("ab" * 32, "pooled")
            if got is not None:
                assert got[1].item() in (1.0, 2.0) and got[999].item() in (999.0, 1998.0)
                reads += 1
    outputs = [w.communicate() for w in writers]
    assert all(w.returncode == 0 for w in writers), outputs
    assert all(int(out) > 10 for out, _ in outputs) and reads > 10
    assert list(cache._tmp.glob("*.tmp")) == []


def test_two_processes_encoding_the_same_images_agree(tmp_path):
    paths = write_pngs(tmp_path / "img", 6)
    code = ("import sys, torch\n"
            "from capeval.models.image_encoder import load_image_encoder\n"
            "enc = load_image_encoder('test_efficientnet', pretrained=False, cache_root=sys.argv[1])\n"
            "torch.save(enc.encode(sys.argv[3:], batch_size=2), sys.argv[2])\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cache"), str(tmp_path / f"{i}.pt"),
                               *map(str, paths)], env=python_env(OMP_NUM_THREADS="1"), stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    a, b = torch.load(tmp_path / "0.pt"), torch.load(tmp_path / "1.pt")
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    enc = load_image_encoder(TINY, pretrained=False, cache_root=tmp_path / "cache")
    assert len(entries(enc)) == 6
    torch.testing.assert_close(enc.encode(paths, batch_size=2, cache=False), enc.encode(paths), rtol=0, atol=1e-5)


def test_a_model_swapped_under_the_same_name_never_reads_the_old_features(tmp_path):
    """The settings (and so the cache folder) name the weights by their digest: other weights, other entries."""
    first = load_image_encoder(TINY, pretrained=False, seed=0, cache_root=tmp_path / "cache")
    swapped = load_image_encoder(TINY, pretrained=False, seed=0, cache_root=tmp_path / "cache")
    with torch.no_grad():
        next(swapped.model.parameters()).add_(0.5)  # same name and weights id, other weights
    swapped.weights_digest = __import__("capeval.models.image_encoder", fromlist=["x"])._weights_digest(swapped.model)
    assert swapped.weights_digest != first.weights_digest
    again = load_image_encoder(TINY, pretrained=False, seed=0, cache_root=tmp_path / "cache")
    assert again.settings == first.settings and f"@{first.weights_digest}," in first.settings
    assert swapped._settings() != first.settings


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0 and not os.environ.get("CAPEVAL_TEST_CHMOD"),
                    reason="root ignores file permissions; the read-only case is simulated below instead")
def test_read_only_cache_folder_falls_back_to_memory(tmp_path):
    _read_only_case(tmp_path, lambda folder: folder.chmod(0o500))


def test_unwritable_cache_folder_falls_back_to_memory_with_one_warning(tmp_path, monkeypatch):
    """Writes that fail (read-only file system, no permission, disk full) keep the features in memory."""
    def refuse(self, tmp, data):
        raise OSError(30, "Read-only file system", str(tmp))

    monkeypatch.setattr(FeatureCache, "_write", refuse)
    _read_only_case(tmp_path, lambda folder: None)


def _read_only_case(tmp_path, make_read_only):
    from capeval.models.feature_cache import CacheUnwritableWarning

    root = tmp_path / "cache"
    root.mkdir()
    make_read_only(root)
    paths = write_pngs(tmp_path / "img", 2)
    enc = load_image_encoder(TINY, pretrained=False, cache_root=root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = enc.encode(paths)
        second = enc.encode(paths)
    unwritable = [w for w in caught if issubclass(w.category, CacheUnwritableWarning)]
    assert len(unwritable) == 1 and str(root) in str(unwritable[0].message)
    assert enc._cache.in_memory and torch.equal(first, second) and torch.isfinite(first).all()
    assert not list(root.rglob("*.safetensors")) and not list(root.rglob("*.tmp"))
    root.chmod(0o700)
