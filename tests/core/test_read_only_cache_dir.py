"""``CAPEVAL_CACHE_DIR`` on a read-only file system: CIDEr-D's document-frequency cache and SPICE's parse cache do as
METEOR's paraphrase cache does: the numbers of a writable cache, what they built kept in memory, and one warning
line naming ``CAPEVAL_CACHE_DIR``. The tests run as root, which ignores permissions, so every write under the folder
is made to fail as a read-only mount answers (``OSError(EROFS)``; SQLite's "attempt to write a readonly database")."""
from __future__ import annotations

import builtins
import errno
import io
import os
import sqlite3
import warnings
from pathlib import Path

import pytest

import capeval
from capeval.paths import CacheUnwritableWarning

PREDICTIONS = ["a dog runs on the grass", "two men ride horses on a beach", "a red bus on a street"]
REFERENCES = [["a brown dog running on a lawn", "a dog runs through a grassy field"],
              ["two people riding horses along the shore", "men on horseback at the beach"],
              ["a red double decker bus on a street"]]
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _read_only_folder(monkeypatch, root: Path) -> None:
    """Every write under ``root`` fails as on a read-only mount; reading works."""
    root = root.resolve()

    def inside(path) -> bool:
        try:
            return Path(os.fsdecode(path)).resolve().is_relative_to(root)
        except (TypeError, ValueError):
            return False

    def refuse(path):
        raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(path))

    real_mkdir, real_os_open, real_open, real_connect = os.mkdir, os.open, builtins.open, sqlite3.connect
    real_replace, real_rename, real_unlink = os.replace, os.rename, os.unlink

    def mkdir(path, *args, **kwargs):
        if inside(path) and not os.path.isdir(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    def os_open(path, flags, *args, **kwargs):
        if flags & _WRITE_FLAGS and inside(path):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def open_(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and set(mode) & set("wax+") and inside(file):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def connect(database, *args, **kwargs):
        name = os.fsdecode(database) if isinstance(database, (str, bytes, os.PathLike)) else ""
        if name.startswith("file:"):
            if "mode=ro" in name:
                return real_connect(database, *args, **kwargs)
            name = name[5:].split("?")[0]
        if name and inside(name):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real_connect(database, *args, **kwargs)

    def moved(real):
        def move(src, dst, *args, **kwargs):
            if inside(src) or inside(dst):
                refuse(dst)
            return real(src, dst, *args, **kwargs)
        return move

    def unlink(path, *args, **kwargs):
        if inside(path):
            refuse(path)
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)
    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(os, "replace", moved(real_replace))
    monkeypatch.setattr(os, "rename", moved(real_rename))
    monkeypatch.setattr(os, "unlink", unlink)
    monkeypatch.setattr(os, "remove", unlink)


def _score(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = capeval.score(PREDICTIONS, REFERENCES, language_check=False, **kwargs)
    return result, [w for w in caught if issubclass(w.category, Warning) and "CAPEVAL_CACHE_DIR" in str(w.message)
                    or issubclass(w.category, CacheUnwritableWarning)]


def _one_line_naming_the_folder(caught) -> str:
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert "\n" not in message and "CAPEVAL_CACHE_DIR" in message
    return message


def test_the_simulation_refuses_writes_and_allows_reads(tmp_path, monkeypatch):
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "kept.txt").write_text("kept")
    _read_only_folder(monkeypatch, tmp_path / "ro")
    assert (tmp_path / "ro" / "kept.txt").read_text() == "kept"
    for write in (lambda: (tmp_path / "ro" / "new").mkdir(), lambda: (tmp_path / "ro" / "x").write_text("x"),
                  lambda: os.open(tmp_path / "ro" / "y", os.O_CREAT | os.O_WRONLY),
                  lambda: sqlite3.connect(tmp_path / "ro" / "db.sqlite")):
        with pytest.raises((OSError, sqlite3.OperationalError)):
            write()
    (tmp_path / "elsewhere").mkdir()  # outside the folder: untouched


def test_cider_df_cache_on_a_read_only_folder(tmp_path, monkeypatch):
    from capeval.coco import document_frequency as cider_df

    def compute(settings, tok):  # a small corpus table instead of COCO val2014's (minutes to count)
        return cider_df.DocumentFrequency(df={"a": 3, "a dog": 1, "dog": 2, "on": 2, "on a": 2, "a red": 1},
                                          n_documents=3, settings=settings)

    monkeypatch.setattr(cider_df, "_compute", compute)
    cider_df._MEMORY.clear()
    try:
        monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "writable"))
        writable, caught = _score(metrics="cider_d", cider_df="coco-val2014")
        assert caught == [] and list((tmp_path / "writable" / "cider_df").glob("*.df"))
        cider_df._MEMORY.clear()
        (tmp_path / "ro").mkdir()
        monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "ro"))
        _read_only_folder(monkeypatch, tmp_path / "ro")
        read_only, caught = _score(metrics="cider_d", cider_df="coco-val2014")
        message = _one_line_naming_the_folder(caught)
        assert str(tmp_path / "ro") in message and "kept in memory" in message
        assert read_only["cider_d"] == writable["cider_d"] and read_only["per_caption"] == writable["per_caption"]
        again, caught = _score(metrics="cider_d", cider_df="coco-val2014")  # the table from memory: no new warning
        assert caught == [] and again["cider_d"] == writable["cider_d"]
        assert list((tmp_path / "ro").iterdir()) == []
    finally:
        cider_df._MEMORY.clear()


def test_spice_parse_cache_on_a_read_only_folder(tmp_path, monkeypatch):
    pytest.importorskip("spacy")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "writable"))
    writable, caught = _score(metrics="spice")
    assert caught == [] and (tmp_path / "writable" / "spice" / "parses.sqlite").is_file()
    (tmp_path / "ro").mkdir()
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "ro"))
    _read_only_folder(monkeypatch, tmp_path / "ro")
    read_only, caught = _score(metrics="spice")
    message = _one_line_naming_the_folder(caught)
    assert str(tmp_path / "ro") in message
    assert read_only["spice"] == writable["spice"] and read_only["per_caption"] == writable["per_caption"]
    assert list((tmp_path / "ro").iterdir()) == []
