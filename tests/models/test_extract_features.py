"""Feature extraction to a file, from Python, the CLI and several accelerate processes (same features)."""
from __future__ import annotations

import socket

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("timm")
pytest.importorskip("accelerate")
from support import run_python  # noqa: E402
from support.images import write_pngs  # noqa: E402

from capeval.cli import main as cli_main  # noqa: E402
from capeval.models.extract_features import ONE_CPU_PROCESS_NOTE, list_images, load, main  # noqa: E402
from capeval.models.image_encoder import load_image_encoder  # noqa: E402

TINY = ["--encoder", "test_efficientnet", "--no-pretrained", "--no-cache"]


def test_one_process_writes_features_names_and_settings(tmp_path):
    write_pngs(tmp_path / "img" / "b", 2, seed=10)
    write_pngs(tmp_path / "img", 3)
    (tmp_path / "img" / "notes.txt").write_text("not an image")
    assert main(["--images", str(tmp_path / "img"), "--out", str(tmp_path / "f.safetensors"), *TINY]) == 0
    tensors, meta = load(tmp_path / "f.safetensors")
    assert meta["images"] == ["b/img000.png", "b/img001.png", "img000.png", "img001.png", "img002.png"]
    assert tensors["features"].shape == (5, 256) and meta["count"] == "5" and meta["processes"] == "1"
    enc = load_image_encoder("test_efficientnet", pretrained=False, cache=False)
    assert meta["settings"] == enc.settings and meta["kind"] == "pooled"
    paths, _ = list_images(tmp_path / "img")
    torch.testing.assert_close(tensors["features"], enc.encode(paths), rtol=0, atol=1e-5)


def test_cli_grid_features_from_a_list_file(tmp_path, capsys):
    write_pngs(tmp_path, 2)
    (tmp_path / "list.txt").write_text("img001.png\n\nimg000.png\n")
    assert cli_main(["features", "extract", "--images", str(tmp_path / "list.txt"), "--out", str(tmp_path / "g"),
                     "--kind", "grid", *TINY]) == 0
    tensors, meta = load(tmp_path / "g")
    assert meta["images"] == ["img001.png", "img000.png"] and tensors["features"].shape == (2, 256, 7, 7)
    assert "2 images ->" in capsys.readouterr().out


def test_native_grids_are_stored_per_image(tmp_path):
    write_pngs(tmp_path / "a", 1, size=(64, 64))
    write_pngs(tmp_path / "b", 1, size=(96, 64), seed=5)
    (tmp_path / "list.txt").write_text("a/img000.png\nb/img000.png\n")
    main(["--images", str(tmp_path / "list.txt"), "--out", str(tmp_path / "n"), "--kind", "grid",
          "--resolution", "native", *TINY])
    tensors, _ = load(tmp_path / "n")
    assert {k: tuple(v.shape) for k, v in tensors.items()} == {"features.0": (256, 2, 2), "features.1": (256, 2, 3)}


def test_bad_sources(tmp_path):
    assert cli_main(["features", "extract", "--images", str(tmp_path / "none"), "--out", "x", *TINY]) == 1
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no image files"):
        list_images(tmp_path / "empty")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _extract(tmp_path, out: str, *launch: str):
    """Run the extraction module in a fresh process (``launch``: under ``accelerate launch LAUNCH``), 1 thread each."""
    if launch:
        launch = ("-m", "accelerate.commands.launch", *launch, "--num_machines", "1", "--mixed_precision", "no",
                  "--dynamo_backend", "no")
    args = [*launch, "-m", "capeval.models.extract_features", "--images", str(tmp_path / "img"),
            "--out", str(tmp_path / out), "--batch-size", "4", "--no-cache"]
    result = run_python(args, env={"OMP_NUM_THREADS": "1", "CAPEVAL_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr[-3000:]
    return load(tmp_path / out), result


def test_accelerate_processes_give_the_features_of_one_process(tmp_path):
    """8 images, real EfficientNet-Lite0: one process vs ``accelerate launch`` with 2 CPU processes.

    Same batch size and thread count on both sides, so the features are bit-identical (a different thread
    count or batch composition changes them at float rounding level only).
    """
    write_pngs(tmp_path / "img", 8, size=(80, 60))
    (one, one_meta), _ = _extract(tmp_path, "one")
    # several CPU processes: accelerate's multi-process launcher (torchrun); without CUDA they use gloo
    (two, two_meta), _ = _extract(tmp_path, "two", "--multi_gpu", "--num_processes", "2",
                                  "--main_process_port", str(_free_port()))
    assert one_meta["processes"] == "1" and two_meta["processes"] == "2"
    assert torch.equal(one["features"], two["features"])
    assert one_meta["images"] == two_meta["images"] and one_meta["settings"] == two_meta["settings"]
    # the spelling: `--cpu --num_processes 2` starts one process in accelerate 1.15; same file, and a note
    (cpu, cpu_meta), result = _extract(tmp_path, "cpu", "--cpu", "--num_processes", "2")
    assert torch.equal(one["features"], cpu["features"]) and cpu_meta["processes"] == "1"
    assert ONE_CPU_PROCESS_NOTE in result.stderr
