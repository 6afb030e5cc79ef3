"""torch is optional: ``import capeval`` and the text metrics never import it; without it the learned parts
raise ``ImportError`` naming ``pip install "capeval[learned]"``. These tests run with or without torch."""
from __future__ import annotations

import sys

import pytest
from support import run_python

from capeval.dependencies import INSTALL_HINT, require

HEAVY = ("torch", "torchvision", "timm", "transformers", "accelerate", "safetensors")


def test_install_hint_is_the_documented_command():
    assert INSTALL_HINT == 'pip install "capeval[learned]"'


def test_text_metrics_and_the_models_package_never_import_torch():
    code = (
        "import sys, json\n"
        "import capeval\n"
        "r = capeval.score(['A dog runs on the grass.'], [['A dog running on grass.', 'A brown dog runs.']],"
        " metrics=['bleu', 'cider_d'])\n"
        "assert r['bleu_4'] >= 0\n"
        "import capeval.models, capeval.models.image_encoder, capeval.models.extract_features\n"
        "import capeval.models.images, capeval.models.feature_cache, capeval.models.efficientnet_lite\n"
        "from capeval.cli import build_parser\n"
        "build_parser()\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    out = run_python(["-c", code])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_require_names_the_missing_module_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)  # what Python does for a module that cannot be imported
    with pytest.raises(ImportError, match=r"'timm'.*pip install \"capeval\[learned\]\""):
        require("timm", what="the image encoders")


def test_require_returns_modules():
    import json
    import math

    assert require("json") is json
    assert require("json", "math") == (json, math)


BLOCK_TORCH = "import sys\nsys.modules['torch'] = None  # as if torch were not installed\n"


@pytest.mark.parametrize("body, returncode, stream", [
    ("from capeval.models.image_encoder import load_image_encoder\nload_image_encoder()", 1, "stderr"),
    ("from capeval.cli import main\nsys.exit(main(['features', 'extract', '--images', '.', '--out', 'x']))", 1,
     "stderr"),
])
def test_learned_parts_without_torch_raise_the_install_hint(body, returncode, stream):
    out = run_python(["-c", BLOCK_TORCH + body])
    assert out.returncode == returncode, out.stderr
    text = getattr(out, stream)
    assert "needs the Python package 'torch'" in text and 'pip install "capeval[learned]"' in text
    if "cli" in body:
        assert "capeval features extract: error:" in text and "Traceback" not in text
    else:
        assert "ImportError: the image encoders needs the Python package 'torch'" in text
