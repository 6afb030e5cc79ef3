"""``capeval score`` above its in-memory limit: the paired rows scored chunk by chunk through
score_dataset, with the in-memory route's numbers, table, signature and JSON (per-caption scores in prediction
order); the routes that stay in memory; the limit's variable. The million-caption memory figure is a benchmark:
``benchmarks/score_memory.py``."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from capeval.cli import main
from capeval.cli.score_in_chunks import chunkable, in_memory_limit

METRICS = "bleu,rouge_l,cider_d"
WORDS = "a the dog cat man woman runs sits on in with red blue grass field street ball child plays water".split()


def _files(tmp_path: Path, n: int = 4100) -> tuple[Path, Path]:
    """``n`` predictions (shuffled ids, so pairing by id matters) and their references, in other orders."""
    rng = random.Random(7)

    def caption() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))

    ids = list(range(n))
    rng.shuffle(ids)
    preds = [{"image_id": i, "caption": caption()} for i in ids]
    refs = {str(i): [caption() for _ in range(rng.randint(1, 3))] for i in range(n)}
    pred_path, ref_path = tmp_path / "preds.jsonl", tmp_path / "refs.json"
    pred_path.write_text("".join(json.dumps(p) + "\n" for p in preds), encoding="utf-8")
    ref_path.write_text(json.dumps(refs), encoding="utf-8")
    return pred_path, ref_path


def _score(capsys, monkeypatch, limit: str, *args) -> tuple[int, str, str]:
    monkeypatch.setenv("CAPEVAL_SCORE_IN_MEMORY_MAX", limit)
    rc = main(["score", *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_chunked_route_gives_the_in_memory_numbers(tmp_path, capsys, monkeypatch):
    pred_path, ref_path = _files(tmp_path)  # 4100 rows: three chunks of 2000, the last short
    common = ["--predictions", pred_path, "--references", ref_path, "--metrics", METRICS, "--no-language-check"]
    rc, out_mem, err_mem = _score(capsys, monkeypatch, "1000000", *common, "--json", tmp_path / "mem.json")
    assert rc == 0 and "in chunks" not in err_mem
    rc, out_chunk, err_chunk = _score(capsys, monkeypatch, "4000", *common, "--json", tmp_path / "chunk.json")
    assert rc == 0
    assert "4100 predictions: scoring in chunks" in err_chunk and "Traceback" not in err_chunk
    mem = json.loads((tmp_path / "mem.json").read_text())
    chunk = json.loads((tmp_path / "chunk.json").read_text())
    assert set(chunk) == set(mem)
    assert chunk["signature"] == mem["signature"]
    for key, value in mem.items():
        if isinstance(value, float):
            assert chunk[key] == pytest.approx(value, abs=1e-12), key
    assert set(chunk["per_caption"]) == set(mem["per_caption"])
    for key, values in mem["per_caption"].items():
        assert len(chunk["per_caption"][key]) == 4100
        assert chunk["per_caption"][key] == pytest.approx(values, abs=1e-12), key  # prediction order kept
    # the printed table is the same, but for the output file's name
    assert out_chunk.replace("chunk.json", "X") == out_mem.replace("mem.json", "X")


def test_per_caption_table_in_chunks(tmp_path, capsys, monkeypatch):
    pred_path, ref_path = _files(tmp_path, n=30)
    common = ["--predictions", pred_path, "--references", ref_path, "--metrics", "bleu_4,rouge_l",
              "--no-language-check", "--per-caption", "--wide"]
    rc, out_mem, _ = _score(capsys, monkeypatch, "100", *common)
    assert rc == 0
    rc, out_chunk, err = _score(capsys, monkeypatch, "0", *common)
    assert rc == 0 and "30 predictions: scoring in chunks" in err
    assert out_chunk == out_mem
    assert len(out_mem.splitlines()) > 30  # one row per caption was printed


def test_routes_that_stay_in_memory(tmp_path, capsys, monkeypatch):
    pred_path, ref_path = _files(tmp_path, n=12)
    rows = [json.loads(line) for line in pred_path.read_text().splitlines()]
    dup = tmp_path / "dup.jsonl"  # each image twice: --duplicate-ids split scores two captioners in memory
    dup.write_text("".join(json.dumps(r) + "\n" for r in rows + rows), encoding="utf-8")
    rc, out, err = _score(capsys, monkeypatch, "0", "--predictions", dup, "--references", ref_path,
                          "--metrics", "bleu", "--duplicate-ids", "split", "--no-language-check")
    assert rc == 0 and "in chunks" not in err and "captioner 2" in out
    assert chunkable({"bleu": ["bleu_4"], "cider_d": ["cider_d"]})
    assert not chunkable({"bleu": ["bleu_4"], "spice_u": ["spice_u"]})


def test_the_limit_variable(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("CAPEVAL_SCORE_IN_MEMORY_MAX", raising=False)
    assert in_memory_limit() == 100_000
    monkeypatch.setenv("CAPEVAL_SCORE_IN_MEMORY_MAX", "25")
    assert in_memory_limit() == 25
    pred_path, ref_path = _files(tmp_path, n=5)
    rc, _, err = _score(capsys, monkeypatch, "lots", "--predictions", pred_path, "--references", ref_path,
                        "--metrics", "bleu")
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 1 and len(lines) == 1 and "CAPEVAL_SCORE_IN_MEMORY_MAX must be a non-negative integer" in lines[0]


@pytest.mark.parametrize("signum, status, word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_a_signal_leaves_one_line_and_no_temporary_folder(tmp_path, signum, status, word):
    """Ctrl-C (SIGINT) and SIGTERM while the chunks are scored: one line, the exit status 128 + the signal, and the
    temporary folder of the paired rows removed."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pred_path, ref_path = _files(tmp_path, n=60_000)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, CAPEVAL_SCORE_IN_MEMORY_MAX="0", TMPDIR=str(scratch))
    child = subprocess.Popen([sys.executable, "-m", "capeval", "score", "--predictions", str(pred_path),
                              "--references", str(ref_path), "--metrics", METRICS, "--no-language-check"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(scratch.glob("capeval-score-*/out")) and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()
            time.sleep(0.05)
        time.sleep(0.5)
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == status, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"capeval score: {word}", err
    assert list(scratch.iterdir()) == []


def test_a_result_that_cannot_be_written_names_its_file(tmp_path, capsys, monkeypatch):
    """A full disk: one line naming the file, and an earlier result left whole (the write is atomic)."""
    import errno
    from pathlib import Path as _Path

    pred_path, ref_path = _files(tmp_path, n=5)
    common = ["--predictions", pred_path, "--references", ref_path, "--metrics", "bleu", "--no-language-check"]
    if _Path("/dev/full").exists():
        rc, _, err = _score(capsys, monkeypatch, "100", *common, "--json", "/dev/full")
        assert rc == 1 and err.strip().splitlines()[-1] == ("capeval score: error: cannot write /dev/full: No space "
                                                            "left on device"), err
    out = tmp_path / "result.json"
    out.write_text('{"earlier": 1}\n')
    import capeval.paths

    def full(path, data, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(capeval.paths, "write_bytes_atomic", full)
    rc, _, err = _score(capsys, monkeypatch, "100", *common, "--json", out)
    assert rc == 1 and f"cannot write {out}: No space left on device" in err and "Traceback" not in err
    assert out.read_text() == '{"earlier": 1}\n'


def test_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    import capeval.api

    def exhausted(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(capeval.api, "score", exhausted)
    pred_path, ref_path = _files(tmp_path, n=5)
    rc, _, err = _score(capsys, monkeypatch, "100", "--predictions", pred_path, "--references", ref_path,
                        "--metrics", "bleu", "--no-language-check")
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("capeval score: error: out of memory"), err


def test_the_chunks_are_scored_in_one_process_per_cpu_at_most_four(monkeypatch):
    import multiprocessing

    import capeval.workers
    from capeval.cli.score_in_chunks import MAX_CHUNK_PROCESSES, chunk_processes

    for cpus, expected in ((1, 1), (2, 2), (3, 3), (16, MAX_CHUNK_PROCESSES)):
        monkeypatch.setattr(capeval.workers, "usable_cpus", lambda cpus=cpus: cpus)
        assert chunk_processes() == expected
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())  # a pool's worker: no pool of its own
    assert chunk_processes() == 1
