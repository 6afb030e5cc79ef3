"""``capeval cache``: what is cached (kind, files, size, age; fits 100 columns; --json) and ``capeval cache clear
[KIND]`` (all, one kind, an unknown kind answered with the closest names), on a temporary CAPEVAL_CACHE_DIR."""
from __future__ import annotations

import json
import os
import time

import pytest

from capeval.cli import main
from capeval.cli.stderr_lines import INDENT, unwrap
from capeval.paths import cache_inventory, file_digest


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(root))
    monkeypatch.setenv("COLUMNS", "100")
    (root / "meteor").mkdir(parents=True)
    (root / "meteor" / "paraphrase-en-v2-0123456789abcdef.npz").write_bytes(b"x" * 2_500_000)
    old = time.time() - 3 * 86400
    os.utime(root / "meteor" / "paraphrase-en-v2-0123456789abcdef.npz", (old, old))
    (root / "spice").mkdir()
    (root / "spice" / "parses.sqlite").write_bytes(b"y" * 1500)
    (root / "a-user-note.txt").write_text("not in a kind's folder")
    return root


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_lists_kinds_sizes_and_ages_within_100_columns(cache, capsys):
    code, out, _ = _run(capsys, "cache")
    assert code == 0 and str(cache) in out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    meteor = next(line for line in lines if line.startswith("meteor"))
    assert "2.5 MB" in meteor and "3 d" in meteor and "paraphrase" in meteor
    spice = next(line for line in lines if line.startswith("spice"))
    assert "1.5 kB" in spice
    assert any(line.startswith("other") for line in lines)  # loose files are counted too
    assert next(line for line in lines if line.startswith("all")).split()[1] == "3"


def test_json_lists_every_kind(cache, capsys):
    code, out, _ = _run(capsys, "cache", "--json", "-")
    rows = json.loads(out)
    assert code == 0 and [r["kind"] for r in rows] == ["meteor", "other", "spice"]
    meteor = rows[0]
    assert meteor["files"] == 1 and meteor["bytes"] == 2_500_000 and 2.9 * 86400 < meteor["age_s"] < 3.1 * 86400


def test_clear_one_kind_then_all(cache, capsys):
    code, out, _ = _run(capsys, "cache", "clear", "meteor")
    assert code == 0 and "removed meteor: 1 file(s), 2.5 MB" in out
    assert not (cache / "meteor").exists() and (cache / "spice" / "parses.sqlite").exists()
    code, out, _ = _run(capsys, "cache", "clear", "meteor")  # a known kind with nothing cached: nothing to do
    assert code == 0 and "nothing cached of kind meteor" in out
    code, out, _ = _run(capsys, "cache", "clear")
    assert code == 0 and "removed spice" in out and "removed other" in out
    assert cache_inventory() == []
    code, out, _ = _run(capsys, "cache")
    assert "nothing cached" in out


def test_an_unknown_kind_gets_the_closest_names_and_nothing_is_removed(cache, capsys):
    code, out, err = _run(capsys, "cache", "clear", "meteorr")
    lines = err.strip().splitlines()  # one message, wrapped to COLUMNS=100 with a hanging indent
    assert code != 0 and all(line.startswith(INDENT) for line in lines[1:]) and "Traceback" not in err
    assert "unknown cache kind 'meteorr'" in unwrap(err) and "did you mean 'meteor'" in unwrap(err)
    assert (cache / "meteor").exists() and (cache / "spice").exists()


def test_remembered_digests_are_keyed_by_path_and_time_stamps(cache, tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"abc")
    first = file_digest(data)
    assert first == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc")
    assert not (cache / "file_digests").exists()  # just written: hashed each time, not remembered yet
    time.sleep(2.1)
    assert file_digest(data) == first
    assert [r["files"] for r in cache_inventory() if r["kind"] == "file_digests"] == [1]
    stamp = data.stat()
    data.write_bytes(b"abd")  # the same size, its modification time put back: the change time still differs
    os.utime(data, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert file_digest(data) == "a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9"
