"""Where capeval reads data and writes caches.

* Benchmark data: ``$CAPEVAL_DATA_DIR``, else ``../shared/data`` relative to the current
  directory or to the source checkout, when it exists.
* Caches (corpus document frequencies, parse caches, score caches): ``$CAPEVAL_CACHE_DIR``,
  else ``$XDG_CACHE_HOME/capeval``, else ``~/.cache/capeval``. Nothing is ever written
  inside site-packages.
* Hub cards (dataset and model card templates): the copy inside an installed wheel
  (``capeval/hub_cards``), else the checkout's ``hub_cards/`` (:func:`hub_cards_dir`).
* Leftovers are never kept forever: the first use of a cache folder in a process removes temporary files of writers
  that were killed (``*.tmp``, ``.tmp-*``: the pid in the name is gone, or an hour old) and keeps, of the damaged
  files moved aside (``*.corrupt-<time>``), only the newest of each, for a day (:func:`sweep_cache_folder`);
  ``capeval cache`` counts them and ``capeval cache clear --leftovers`` removes them (:func:`cache_leftovers`).
* Files capeval writes honour the umask (``0o666 & ~umask``, folders ``0o777 & ~umask``), also those written
  atomically through a temporary file (:func:`atomic_write`, :func:`write_bytes_atomic`).
* Resources shipped by ``pycocoevalcap==1.2`` (METEOR 1.5 jar, CoreNLP 3.4.1 PTB tokenizer
  jar, SPICE jar holding the COCO 2014 captions) are located, never copied.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

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
    """Return (and create) a cache sub-directory owned by capeval; the first call of a process for a folder removes
    what killed writers and earlier damage left in it (:func:`sweep_cache_folder`)."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    sweep_cache_folder(path)  # stale temporary files of killed writers, old damaged copies (once per process)
    return path


def cache_file(kind: str, name: str) -> Path:
    """``<cache dir>/<kind>/<name>``, the default place of a cache file; a cache folder that cannot be created is not
    an error here (the cache then keeps to memory, with its one warning)."""
    try:
        return cache_dir(kind) / name
    except OSError:
        return cache_root() / kind / name


def current_umask() -> int:
    """The process's umask (e.g. ``0o022``), read without changing it where Linux says it (``/proc/self/status``),
    else by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The permission bits a new file gets under the current umask: ``0o666 & ~umask`` (``0o644`` under 022)."""
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, *, fsync: bool = True, prefix: str | None = None,
                 suffix: str = "") -> Iterator[BinaryIO]:
    """Write ``path`` all at once: ``with atomic_write(path) as handle: handle.write(...)`` writes a temporary file in
    the same folder (``prefix`` + the writer's pid + ``.`` + random + ``suffix``; default prefix ``.tmp-<name>.``; the
    pid lets :func:`sweep_cache_folder` tell a killed writer's file), gives it the umask's permissions
    (:func:`file_mode`; ``tempfile.mkstemp`` alone makes it ``0o600``), flushes it to disk (``fsync``) and renames it
    over ``path``; a reader never sees half a file. On an error the temporary file is removed and ``path`` is left as
    it was. Missing parent folders are created (with the umask's permissions)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = prefix if prefix is not None else f".tmp-{path.name}."
    if f".{os.getpid()}." not in prefix:  # the writer's pid in the name: a later run can tell a killed writer's file
        prefix = f"{prefix}{os.getpid()}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes, *, fsync: bool = True) -> None:
    """``data`` into ``path`` through :func:`atomic_write`."""
    with atomic_write(path, fsync=fsync) as handle:
        handle.write(data)


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 (hex) of a file's content, for cache keys of data built from installed files (environments with
    the same file share one copy). Remembered under ``<cache>/file_digests/`` per path, size, inode, modification and
    status-change times, so a file is read once (about 0.1 s per 60 MB); a file touched, written or replaced is read
    again. A file modified in the last :data:`RACY_SECONDS` is not remembered (a write within the file system's
    time-stamp granularity could leave the stamp unchanged)."""
    import hashlib
    import json
    import time

    path = Path(path).resolve()
    stat = path.stat()
    stamp = {"path": str(path), "size": stat.st_size, "inode": stat.st_ino, "mtime_ns": stat.st_mtime_ns,
             "ctime_ns": stat.st_ctime_ns}
    memo = cache_root() / "file_digests" / (hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:24] + ".json")
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
        if {k: known.get(k) for k in stamp} == stamp and isinstance(known.get("sha256"), str):
            return known["sha256"]
    except (OSError, ValueError):
        pass
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    if time.time() - max(stat.st_mtime, stat.st_ctime) < RACY_SECONDS:
        return digest
    try:
        write_bytes_atomic(memo, json.dumps({**stamp, "sha256": digest}).encode("utf-8"), fsync=False)
        _prune_digests(memo.parent)
    except OSError:
        pass  # an unwritable cache: computed again next time
    return digest


#: A file changed less than this many seconds ago is hashed each time, not remembered.
RACY_SECONDS = 2.0
#: Remembered digests kept before those of files that no longer exist are removed.
MAX_DIGESTS = 200


def _prune_digests(folder: Path) -> None:
    """Remove the remembered digests of files that are gone, once there are more than :data:`MAX_DIGESTS`."""
    import json

    memos = list(folder.glob("*.json"))
    if len(memos) <= MAX_DIGESTS:
        return
    for memo in memos:
        try:
            if not Path(json.loads(memo.read_text(encoding="utf-8"))["path"]).exists():
                memo.unlink(missing_ok=True)
        except (OSError, ValueError, KeyError, TypeError):
            memo.unlink(missing_ok=True)


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


#: What each kind of cache (a folder under :func:`cache_root`) holds; ``capeval cache`` lists them.
CACHE_KINDS = {
    "cider_df": "CIDEr-D document frequencies of COCO val2014",
    "file_digests": "content hashes of installed and input files (cache keys)",
    "image_features": "image features of the learned critic's encoders",
    "lceval": "LCEval's parses and features",
    "meteor": "METEOR's paraphrase table (built from pycocoevalcap's file)",
    "models": "weights fetched for vision-language metrics (PAC-S, Polos)",
    "scores": "benchmark score cache (capeval bench)",
    "sentence_rank": "sentence_rank's training embeddings",
    "sentence_vectors": "sentence embeddings (sentence_cosine, sentence_rank)",
    "spice": "SPICE's scene-graph parses",
}


def cache_inventory() -> list[dict]:
    """Per kind of cache present under :func:`cache_root` (its sub-folders; loose files count as kind ``other``):
    ``{"kind", "description", "path", "files", "bytes", "newest", "leftovers", "leftover_bytes"}`` (``newest``: the
    latest modification time of its files, seconds since the epoch, ``None`` when empty; ``leftovers``: how many of
    its files are temporary files of writers or damaged copies moved aside, :func:`cache_leftovers`, and their
    bytes), sorted by kind."""
    root = cache_root()
    if not root.is_dir():
        return []
    kinds: dict[str, dict] = {}
    for entry in sorted(root.iterdir()):
        kind = entry.name if entry.is_dir() and not entry.is_symlink() else "other"
        row = kinds.setdefault(kind, {"kind": kind, "description": CACHE_KINDS.get(kind, "files capeval did not name"),
                                      "path": str(entry if kind != "other" else root), "files": 0, "bytes": 0,
                                      "newest": None, "leftovers": 0, "leftover_bytes": 0})
        for path in ([entry] if kind == "other" else entry.rglob("*")):
            try:
                info = path.lstat()
            except OSError:
                continue
            if not path.is_file() or path.is_symlink():
                continue
            row["files"] += 1
            row["bytes"] += info.st_size
            row["newest"] = max(row["newest"] or 0.0, info.st_mtime)
            name = path.name
            if name.endswith(".tmp") or name.startswith(".tmp-") or ".corrupt-" in name:
                row["leftovers"] += 1
                row["leftover_bytes"] += info.st_size
    return [kinds[k] for k in sorted(kinds)]


def clear_cache(kind: str | None = None) -> list[dict]:
    """Delete every cache (``kind=None``) or one kind's folder under :func:`cache_root`; returns the inventory rows
    removed (``[]`` when there was nothing). A ``kind`` that is neither present nor one of :data:`CACHE_KINDS` raises
    ``ValueError`` naming the closest kinds."""
    import shutil

    from capeval.suggest import did_you_mean

    present = cache_inventory()
    if kind is not None:
        names = [row["kind"] for row in present]
        if kind not in names and kind not in CACHE_KINDS:
            valid = sorted(set(names) | set(CACHE_KINDS))
            hint = did_you_mean(kind, valid)
            raise ValueError(f"unknown cache kind {kind!r}{hint or '.'} Kinds: {', '.join(valid)}.")
        present = [row for row in present if row["kind"] == kind]
    for row in present:
        if row["kind"] == "other":
            for path in cache_root().iterdir():
                if path.is_file() or path.is_symlink():
                    path.unlink(missing_ok=True)
        else:
            shutil.rmtree(row["path"], ignore_errors=True)
    return present


class CacheRebuiltWarning(UserWarning):
    """A cache file could not be used (unreadable, wrong shape) and is being rebuilt."""


class CacheUnwritableWarning(UserWarning):
    """A cache cannot be written (read-only, no permission, disk full): its new entries are kept in memory for this
    process instead."""


def quarantine_cache_file(path: Path, why: str, *, warn: bool = True) -> Path | None:
    """Move an unusable cache file aside (``<name>.corrupt-<time>``) so that it can be rebuilt; warn (unless
    ``warn=False``: the caller says it in its own one warning).

    Only the newest damaged copy of a file is kept: older ``<name>.corrupt-*`` files are deleted here (and by
    :func:`remove_cache_leftovers` once they are :data:`CORRUPT_KEEP_SECONDS` old). Returns the new location (``None``
    if the file could not be moved; it is then deleted if possible).
    """
    import time

    from capeval.validation import warn_at_caller

    for older in path.parent.glob(f"{_glob_escape(path.name)}.corrupt-*"):
        with contextlib.suppress(OSError):
            older.unlink()
    target: Path | None = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
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
    if warn:
        where = f"moved aside to {target}" if target is not None else (
            "deleted" if not path.exists() else "left in place (it cannot be moved: delete it)")
        warn_at_caller(f"cache file {path} {why}; {where} and rebuilt (CAPEVAL_CACHE_DIR sets the cache folder).",
                       CacheRebuiltWarning)
    return target


def _glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


#: A temporary file whose writer cannot be identified (no live pid in its name) is stale once this old (seconds).
STALE_TEMP_SECONDS = 3600.0
#: A damaged cache file moved aside (``*.corrupt-<time>``) is deleted once this old (seconds): kept a day to look at.
CORRUPT_KEEP_SECONDS = 86400.0


def _pid_of(name: str) -> int | None:
    """The writer's pid in a temporary file's name: ``<name>.<pid>.<random>.tmp`` or ``.tmp-<name>.<pid>.<random>``
    (:func:`atomic_write`'s names); ``None`` when the name holds none."""
    stem = name[:-4] if name.endswith(".tmp") else name
    parts = stem.rsplit(".", 2)
    return int(parts[-2]) if len(parts) == 3 and parts[-2].isdigit() else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists but belongs to someone else, or cannot tell: keep the file
    return True


def cache_leftovers(root: str | os.PathLike | None = None, *, live_temps: bool = True) -> list[tuple[Path, int]]:
    """The files under a cache folder (``root``, default :func:`cache_root`, at any depth) that no cache reads:
    temporary files of writers (``*.tmp``, ``.tmp-*``) and damaged files moved aside (``*.corrupt-<time>``), as
    ``[(path, bytes)]``. With ``live_temps=False`` only the temporary files whose writer is gone (the pid in the name
    no longer runs) or, without a pid, older than :data:`STALE_TEMP_SECONDS` (a live writer's file is left alone)."""
    import time

    root = Path(root) if root is not None else cache_root()
    if not root.is_dir():
        return []
    now, found = time.time(), []
    for folder, _dirs, files in os.walk(root):
        for name in files:
            is_tmp = name.endswith(".tmp") or name.startswith(".tmp-")
            if not (is_tmp or ".corrupt-" in name):
                continue
            path = Path(folder) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if is_tmp and not live_temps and ".corrupt-" not in name and not _stale_temp(name, now - info.st_mtime):
                continue
            found.append((path, info.st_size))
    return sorted(found)


def _stale_temp(name: str, age: float) -> bool:
    """Whether a temporary file is a killed writer's: its pid (in its name) is gone, or it is over an hour old."""
    pid = _pid_of(name)
    return (pid is not None and pid != os.getpid() and not _pid_alive(pid)) or age > STALE_TEMP_SECONDS


def remove_cache_leftovers(root: str | os.PathLike | None = None) -> list[tuple[Path, int]]:
    """Delete the :func:`cache_leftovers` under ``root`` but the temporary files of writers still running; returns
    those removed (``capeval cache clear --leftovers``)."""
    removed = []
    for path, size in cache_leftovers(root, live_temps=False):
        try:
            path.unlink()
            removed.append((path, size))
        except OSError:
            pass
    return removed


_SWEPT: set[str] = set()


def sweep_cache_folder(folder: str | os.PathLike) -> None:
    """Clean one cache folder (its files, not its sub-folders), once per process and folder, so that what killed
    writers and damage left is never kept forever: temporary files of writers that are gone (or over
    :data:`STALE_TEMP_SECONDS` old) are deleted, and of the damaged copies moved aside (``<name>.corrupt-<time>``)
    only the newest of each file is kept, for :data:`CORRUPT_KEEP_SECONDS`."""
    import time

    folder = Path(folder)
    if str(folder) in _SWEPT:
        return
    _SWEPT.add(str(folder))
    try:
        entries = [e for e in os.scandir(folder) if e.is_file(follow_symlinks=False)]
    except OSError:
        return
    now = time.time()
    newest: dict[str, tuple[float, str]] = {}
    for entry in entries:
        name = entry.name
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if ".corrupt-" in name:
            base = name.split(".corrupt-", 1)[0]
            if now - mtime > CORRUPT_KEEP_SECONDS:
                _unlink(entry.path)
            elif base not in newest or mtime > newest[base][0]:
                if base in newest:
                    _unlink(newest[base][1])
                newest[base] = (mtime, entry.path)
            else:
                _unlink(entry.path)
        elif (name.endswith(".tmp") or name.startswith(".tmp-")) and _stale_temp(name, now - mtime):
            _unlink(entry.path)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
