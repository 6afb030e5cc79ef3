"""Hub card templates ship inside the wheel: a user who pip-installed capeval (no checkout) can build cards."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

from support import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (path,) = out.glob("capeval-*.whl")
    return path


def test_wheel_contains_every_card_template(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "hub_cards").rglob("*.md"))
    assert templates, "no card templates in the checkout"
    missing = [t for t in templates if f"capeval/{t}" not in names]
    assert missing == []


def test_installed_wheel_finds_and_renders_cards_outside_a_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # a wheel is an importable zip layout: same as pip's install
    code = (
        "import capeval, capeval.hub.cards as cards\n"
        "from pathlib import Path\n"
        "folder = cards.cards_directory()\n"
        "assert Path(capeval.__file__).is_relative_to(Path(__import__('sys').argv[1])), capeval.__file__\n"
        "meta, body = cards.split_front_matter((folder / 'pascal50s.md').read_text(), 'pascal50s.md')\n"
        "print(folder.relative_to(Path(capeval.__file__).parent), meta['pretty_name'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", code, str(site)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("hub_cards/datasets ")


def test_wheel_ships_the_bundled_models_and_nothing_else_and_stays_small(wheel):
    """The wheel holds every file of the bundled models (the metrics' defaults and what they read), no other model
    (those are Hub repos, in the checkout under hub_models/), and stays under 40 MB."""
    from capeval.catalog import BUNDLED
    from capeval.model_store import bundled_dir

    names = set(zipfile.ZipFile(wheel).namelist())
    for name in BUNDLED:
        folder = bundled_dir(name)
        files = [p.relative_to(folder.parents[1]).as_posix() for p in folder.rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts]
        assert files, name
        missing = [f for f in files if f"capeval/{f}" not in names]
        assert missing == [], f"{name}: not in the wheel: {missing}"
    shipped = {n.split("/")[2] for n in names if n.startswith("capeval/pretrained/") and n.count("/") >= 3}
    assert shipped == set(BUNDLED)
    assert not any(n.startswith("hub_models/") or "/hub_models/" in n for n in names)
    assert wheel.stat().st_size <= 40e6, f"the wheel is {wheel.stat().st_size / 1e6:.1f} MB (goal: 40 MB)"


def test_wheel_ships_the_example_data(wheel):
    """`capeval score --example` and the image Spaces' Example read these from the installed package."""
    names = set(zipfile.ZipFile(wheel).namelist())
    folder = ROOT / "modules" / "capeval" / "data" / "example"
    files = sorted(p.relative_to(folder.parents[1]).as_posix() for p in folder.rglob("*") if p.is_file())
    assert "capeval/data/example/images/chelsea.jpg" in {f"capeval/{f}" for f in files}
    assert [f for f in files if f"capeval/{f}" not in names] == []
