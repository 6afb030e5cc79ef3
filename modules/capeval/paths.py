"""Where capeval reads data and writes caches.

* Benchmark data: ``$CAPEVAL_DATA_DIR``, else ``../shared/data`` relative to the current
  directory or to the source checkout, when it exists.
* Caches (corpus document frequencies, parse caches, score caches): ``$CAPEVAL_CACHE_DIR``,
  else ``$XDG_CACHE_HOME/capeval``, else ``~/.cache/capeval``. Nothing is ever written
  inside site-packages.
* Hub cards (dataset and model card templates): the copy inside an installed wheel
  (``capeval/hub_cards``), else the checkout's ``hub_cards/`` (:func:`hub_cards_dir`).
* Resources shipped by ``pycocoevalcap==1.2`` (METEOR 1.5 jar, CoreNLP 3.4.1 PTB tokenizer
  jar, SPICE jar holding the COCO 2014 captions) are located, never copied.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT_ROOT = _PACKAGE_DIR.parents[1]


def data_dir(required: bool = False) -> Path | None:
    """Return the benchmark data directory, or ``None`` when there is none.

    With ``required=True`` a missing directory raises ``FileNotFoundError`` naming the fix.
    """
    env = os.environ.get("CAPEVAL_DATA_DIR")
    if env:
        path = Path(env).expanduser()
        if path.is_dir():
            return path
        if required:
            raise FileNotFoundError(f"CAPEVAL_DATA_DIR={env!r} is not a directory.")
        return None
    for candidate in (Path.cwd() / ".." / "shared" / "data", _CHECKOUT_ROOT / ".." / "shared" / "data"):
        if candidate.is_dir():
            return candidate.resolve()
    if required:
        raise FileNotFoundError(
            "No benchmark data directory: set CAPEVAL_DATA_DIR to the folder holding "
            "flickr8k/, pascal50s/, thumb/, composite/ ... (see BENCHMARKS.md)."
        )
    return None


def cache_root() -> Path:
    """capeval's cache folder (not created): ``$CAPEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/capeval``, else
    ``~/.cache/capeval``."""
    env = os.environ.get("CAPEVAL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "capeval"


def cache_dir(*parts: str) -> Path:
    """Return (and create) a cache sub-directory owned by capeval."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def hub_cards_dir(*parts: str) -> Path:
    """The Hub card templates: ``capeval/hub_cards`` in an installed wheel, else the checkout's ``hub_cards``.

    ``FileNotFoundError`` names both places when neither exists (e.g. a wheel built without them).
    """
    for root in (_PACKAGE_DIR / "hub_cards", _CHECKOUT_ROOT / "hub_cards"):
        if root.is_dir():
            return root.joinpath(*parts)
    raise FileNotFoundError(
        f"Hub card templates not found in {_PACKAGE_DIR / 'hub_cards'} (installed wheel) or "
        f"{_CHECKOUT_ROOT / 'hub_cards'} (checkout); reinstall capeval or pass the folder explicitly."
    )


def pycocoevalcap_dir() -> Path:
    """Directory of the installed ``pycocoevalcap`` package (a namespace package in 1.2)."""
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "pycocoevalcap==1.2 is required for its jars (METEOR 1.5, PTB tokenizer, COCO captions): "
            "pip install pycocoevalcap==1.2"
        )
    return Path(list(spec.submodule_search_locations)[0])


def meteor_jar() -> Path:
    return pycocoevalcap_dir() / "meteor" / "meteor-1.5.jar"


def corenlp_ptb_jar() -> Path:
    return pycocoevalcap_dir() / "tokenizer" / "stanford-corenlp-3.4.1.jar"


def spice_jar() -> Path:
    return pycocoevalcap_dir() / "spice" / "spice-1.0.jar"


class CacheRebuiltWarning(UserWarning):
    """A cache file could not be used (unreadable, wrong shape) and is being rebuilt."""


def quarantine_cache_file(path: Path, why: str) -> Path | None:
    """Move an unusable cache file aside (``<name>.corrupt-<time>``) so that it can be rebuilt; warn.

    Returns the new location (``None`` if the file could not be moved; it is then deleted if possible).
    """
    import time

    from capeval.validation import warn_at_caller

    target = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    try:
        os.replace(path, target)
    except OSError:
        target = None
        try:
            path.unlink()
        except OSError:
            pass
    for suffix in ("-wal", "-shm", "-journal"):  # SQLite side files of the old database
        try:
            path.with_name(path.name + suffix).unlink()
        except OSError:
            pass
    warn_at_caller(f"cache file {path} {why}; moved aside to {target} and rebuilt.", CacheRebuiltWarning)
    return target
