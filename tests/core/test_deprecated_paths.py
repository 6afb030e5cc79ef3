"""Old (0.1) import paths and CLI spellings keep working, with a DeprecationWarning naming the new home."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from capeval._deprecated import MOVED
from support import ROOT

MOVED_MODULES = sorted(old for old, new in MOVED.items() if new is not None)


def _fresh_import(old: str) -> subprocess.CompletedProcess:
    code = (
        "import importlib, warnings\n"
        "import capeval\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    importlib.import_module({old!r})\n"
        "for w in caught:\n"
        "    print(w.category.__name__, w.message)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("old", ["capeval.metrics.bleu", "capeval.spiceu", "capeval.bench.cache", "capeval.cider_df"])
def test_old_path_warns_and_names_the_new_home(old):
    out = _fresh_import(old)
    assert out.returncode == 0, out.stderr
    assert f"DeprecationWarning {old} moved to {MOVED[old]} in capeval 0.2" in out.stdout


@pytest.mark.parametrize("old", MOVED_MODULES)
def test_old_path_is_the_same_module_object(old):
    with pytest.warns(DeprecationWarning):
        sys.modules.pop(old, None)
        legacy = importlib.import_module(old)
    assert legacy is importlib.import_module(MOVED[old])


def test_submodules_of_old_packages_are_not_loaded_twice():
    with pytest.warns(DeprecationWarning):
        for name in ("capeval.spiceu", "capeval.spiceu.uniqueness"):
            sys.modules.pop(name, None)
        from capeval.spiceu.uniqueness import UniquenessTable
    from capeval.spice_u.uniqueness import UniquenessTable as current

    assert UniquenessTable is current


def test_old_metrics_package_exposes_registry_and_base_class():
    sys.modules.pop("capeval.metrics", None)
    with pytest.warns(DeprecationWarning, match="capeval.registry and capeval.metric"):
        import capeval.metrics as old
    from capeval.metric import CaptionMetric
    from capeval.registry import REGISTRY

    assert old.CaptionMetric is CaptionMetric and old.REGISTRY is REGISTRY
    module, cls, keys = old.REGISTRY["bleu"]  # 0.1 entries were (module, class, keys) tuples
    assert (cls, keys[-1]) == ("Bleu", "bleu_4") and old.metric_class("cider_d").__name__ == "CiderD"


def test_cli_accepts_the_old_spice_u_spelling(capsys):
    from capeval.cli import main

    for spelling in ("spice_u", "spice-u"):
        with pytest.raises(SystemExit) as exit_:
            main([spelling, "build-uniqueness", "--help"])
        assert exit_.value.code == 0
        assert "--captions" in capsys.readouterr().out
