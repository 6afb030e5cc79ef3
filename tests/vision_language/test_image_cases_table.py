"""The direction of docs/vision_language.md's table "Image cases: where capeval's decoding differs from the reference
code" (measured by benchmarks/image_cases_vs_references.py) holds: for a few of its cases the pixels capeval hands
the model are equal to, or differ from, the references' as the table says, and the table's pixel cell is what the
benchmark measures now. Pixels only (no model): seconds."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PIL")
pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")  # FLEUR's CLIP image processor

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "vision_language.md"
SECTION = "## Image cases: where capeval's decoding differs from the reference code"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("image_cases_vs_references",
                                                  ROOT / "benchmarks" / "image_cases_vs_references.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def files(bench, tmp_path_factory):
    """The benchmark's cases by name, each written once (only the ones asked for)."""
    folder = tmp_path_factory.mktemp("image-cases")
    by_name = {case.name: case for case in bench.cases()}
    written = {}

    def path(name: str) -> Path:
        if name not in written:
            written[name] = by_name[name].write(folder)
        return written[name]

    return path


def _doc_row(name: str) -> list[str]:
    """The cells of the documented row for case ``name`` in the section's table."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC.name} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if line.startswith(f"| {name} |"):
            return [cell.strip() for cell in line.strip().strip("|").split(" | ")]
    raise AssertionError(f"no row for {name!r} in the section's table")


def _pixel_cell(bench, path) -> str:
    found = bench.pixel_differences(path)
    return bench._cell([found[k] for k in bench.PIXEL_KEYS], "pixels")


def test_ordinary_files_give_the_references_pixels(bench, files):
    """The controls (a PNG, and a JPEG decoded by torchvision's operator): the same pixels as every reference."""
    for name in ("RGB PNG", "baseline JPEG, 4:2:0"):
        path = files(name)
        assert np.array_equal(bench.capeval_pixels(path), bench.clipscore_pixels(path)), name
        assert bench.pixel_differences(path) == {"clipscore": 0.0, "polos": 0.0, "fleur": 0.0}, name
    assert _doc_row("ordinary files (14 controls, listed below)")[4] == "0 · 0 · 0"


def test_cmyk_differs_from_clipscore_by_one_level_and_equals_polos(bench, files):
    """clipscore.py / PAC-S resize the CMYK image before converting it (one level of rounding apart); Polos and FLEUR
    convert first, as capeval: equal."""
    name = "CMYK JPEG (Adobe marker, inverted: as Pillow and Photoshop write it)"
    path = files(name)
    ours, theirs = bench.capeval_pixels(path).astype(int), bench.clipscore_pixels(path).astype(int)
    assert np.abs(ours - theirs).max() == 1 and (ours != theirs).any()
    assert np.array_equal(bench.capeval_pixels(path), bench.polos_pixels(path))
    assert _pixel_cell(bench, path) == _doc_row(name)[4] == "1 · 0 · 0"


def test_transparent_background_is_white_in_capeval_and_black_in_the_references(bench, files):
    name = "RGBA PNG, transparent background (black under it)"
    path = files(name)
    corner = (0, 0)  # outside the opaque disc: fully transparent, black stored under it
    assert tuple(bench.capeval_pixels(path)[corner]) == (255, 255, 255)
    assert tuple(bench.clipscore_pixels(path)[corner]) == (0, 0, 0)
    assert tuple(bench.polos_pixels(path)[corner]) == (0, 0, 0)
    assert _pixel_cell(bench, path) == _doc_row(name)[4] == "255 · 255 · 255"


def test_palette_images_differ_from_clipscore_only(bench, files):
    """Pillow resizes a palette image with nearest-neighbour whatever is asked: clipscore.py / PAC-S (resize first)
    differ from capeval's bicubic; Polos and FLEUR convert first, so they equal capeval."""
    name = "palette PNG (255 colours)"
    path = files(name)
    found = bench.pixel_differences(path)
    assert found["clipscore"] > 16 and found["polos"] == 0 and found["fleur"] == 0
    assert _pixel_cell(bench, path) == _doc_row(name)[4]


def test_float_tiff_is_refused_by_capeval_and_read_by_the_references(bench, files):
    path = files("32-bit float TIFF (mode F), values in [0, 1]")
    with pytest.raises(ValueError, match=r"images\[0\].*mode F"):
        bench.capeval_pixels(path)
    assert bench.clipscore_pixels(path).max() <= 1  # [0, 1] floats clipped to 0..255: black
