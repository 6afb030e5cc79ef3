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


@pytest.mark.parametrize("phase", ["scoring", "reading"])
@pytest.mark.parametrize("signum, status, word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_a_signal_leaves_one_line_and_no_temporary_folder(tmp_path, signum, status, word, phase):
    """Ctrl-C (SIGINT) and SIGTERM while the chunks are scored, or while the two files are read (the references by a
    process of their own): one line, the exit status 128 + the signal, the temporary folder removed and no process
    left."""
    import os
    import signal
    import subprocess
    import sys
    import time

    psutil = pytest.importorskip("psutil")
    pred_path, ref_path = _files(tmp_path, n=60_000)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, CAPEVAL_SCORE_IN_MEMORY_MAX="0", TMPDIR=str(scratch))
    child = subprocess.Popen([sys.executable, "-m", "capeval", "score", "--predictions", str(pred_path),
                              "--references", str(ref_path), "--metrics", METRICS, "--no-language-check"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        sign = "capeval-score-*/out" if phase == "scoring" else "capeval-score-*/references.sqlite"
        while not any(scratch.glob(sign)) and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()
            time.sleep(0.01)
        assert not any(scratch.glob("capeval-score-*/rows.jsonl")) or phase == "scoring"
        time.sleep(0.5 if phase == "scoring" else 0.05)
        children = psutil.Process(child.pid).children(recursive=True)
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == status, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"capeval score: {word}", err
    assert list(scratch.iterdir()) == []
    def running(process) -> bool:
        try:
            return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + 10
    while any(map(running, children)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children and not [c for c in children if running(c)]


def test_the_folder_a_sigkill_left_is_removed_by_the_next_run(tmp_path):
    """SIGKILL (nothing can clean up) while the files are read into the index: the next chunked run removes the
    folder once it is over a minute old (``capeval.scratch``), and leaves nothing itself."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from capeval.scratch import STALE_AFTER_S

    pred_path, ref_path = _files(tmp_path, n=60_000)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, CAPEVAL_SCORE_IN_MEMORY_MAX="0", TMPDIR=str(scratch))
    command = [sys.executable, "-m", "capeval", "score", "--predictions", str(pred_path), "--references",
               str(ref_path), "--metrics", "caption_length", "--no-language-check"]
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(scratch.glob("capeval-score-*/index.sqlite")) and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
    (left,) = scratch.iterdir()
    assert (left / "index.sqlite").is_file()
    past = time.time() - STALE_AFTER_S - 5
    os.utime(left, (past, past))
    (tmp_path / "small").mkdir()
    small_pred, small_ref = _files(tmp_path / "small", n=30)
    done = subprocess.run([*command[:5], str(small_pred), "--references", str(small_ref), *command[8:]], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "scoring in chunks" in done.stderr and list(scratch.iterdir()) == []


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


def _forms(tmp_path: Path) -> dict[str, tuple[Path, Path]]:
    """Every input form ``capeval score`` reads, 7 predictions each, ids in another order than the references'."""
    rng = random.Random(3)

    def caption() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))

    ids = [5, 3, 1, 0, 6, 2, 4]
    preds = {i: caption() for i in ids}
    refs = {i: [caption() for _ in range(1 + i % 3)] for i in range(8)}  # image 7: no prediction (a warning)
    files: dict[str, tuple[Path, Path]] = {}

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    files["json lists (by position)"] = (write("p.json", json.dumps([preds[i] for i in ids])),
                                         write("r.json", json.dumps([refs[i] for i in ids], indent=2)))
    files["coco results + annotations"] = (
        write("res.json", json.dumps([{"image_id": i, "caption": preds[i]} for i in ids])),
        write("ann.json", json.dumps({"images": [{"id": i} for i in refs], "annotations": [
            {"image_id": i, "id": 100 + k, "caption": r} for i in refs for k, r in enumerate(refs[i])]})))
    files["pycocoevalcap dicts"] = (write("res_d.json", json.dumps({str(i): [preds[i]] for i in ids})),
                                    write("gts_d.json", json.dumps({str(i): refs[i] for i in refs}, indent=1)))
    files["jsonl with ids"] = (
        write("p.jsonl", "".join(json.dumps({"id": i, "prediction": preds[i]}) + "\n" for i in ids)),
        write("r.jsonl", "".join(json.dumps({"image_id": str(i), "references": refs[i]}) + "\n" for i in refs)))
    rows = [(i, r) for k in range(3) for i in refs for j, r in enumerate(refs[i]) if j == k]  # one id on many rows
    files["csv, several rows per id"] = (
        write("p.csv", "image_id,caption\n" + "".join(f"{i},{preds[i]}\n" for i in ids)),
        write("r.csv", "image_id,reference\n" + "".join(f"{i},\"{r}\"\n" for i, r in rows)))
    files["csv, ref1/ref2 columns"] = (
        write("p2.csv", "\ufeffcaption\n" + "".join(f"{preds[i]}\n" for i in ids)),
        write("r2.csv", "ref1,ref2\r\n" + "".join(f"{refs[i][0]},{refs[i][-1]}\r\n" for i in ids)))
    return files


FORMS = ["json lists (by position)", "coco results + annotations", "pycocoevalcap dicts", "jsonl with ids",
         "csv, several rows per id", "csv, ref1/ref2 columns"]


@pytest.mark.parametrize("form", FORMS)
def test_every_input_form_streams_to_the_in_memory_output(tmp_path, capsys, monkeypatch, form):
    pred_path, ref_path = _forms(tmp_path)[form]
    common = ["--predictions", pred_path, "--references", ref_path, "--metrics", "bleu_4,rouge_l,cider_d",
              "--no-language-check", "--per-caption", "--wide"]
    rc, out_mem, err_mem = _score(capsys, monkeypatch, "100", *common, "--json", tmp_path / "mem.json")
    assert rc == 0 and "in chunks" not in err_mem
    rc, out_chunk, err_chunk = _score(capsys, monkeypatch, "0", *common, "--json", tmp_path / "chunk.json")
    assert rc == 0 and "7 predictions: scoring in chunks" in err_chunk, err_chunk
    assert out_chunk.replace("chunk.json", "X") == out_mem.replace("mem.json", "X")  # tables, per-caption rows too
    assert len(out_chunk.splitlines()) > 7
    warnings = [line for line in err_mem.splitlines() if "warning" in line]
    assert warnings == [line for line in err_chunk.splitlines() if "warning" in line]
    assert bool(warnings) == (form not in ("json lists (by position)", "csv, ref1/ref2 columns"))  # image 7
    text = (tmp_path / "chunk.json").read_text(encoding="utf-8")
    chunk, mem = json.loads(text), json.loads((tmp_path / "mem.json").read_text(encoding="utf-8"))
    assert text == json.dumps(chunk, indent=2, ensure_ascii=False) + "\n"  # write_json's bytes, written piecewise
    assert set(chunk) == set(mem) and chunk.get("image_ids") == mem.get("image_ids")
    assert ("image_ids" in mem) == (form not in ("json lists (by position)", "csv, ref1/ref2 columns"))
    for key, values in mem["per_caption"].items():
        assert chunk["per_caption"][key] == pytest.approx(values, abs=1e-12), key
    for key, value in mem.items():
        if isinstance(value, float):
            assert chunk[key] == pytest.approx(value, abs=1e-12), key
    assert chunk["signature"] == mem["signature"]


BAD = [  # (predictions file, its text, references file, its text)
    ("p.json", '[{"image_id": 1, "caption": "a dog"}, {"image_id": 1, "caption": "a cat"}]', "r.json", '{"1": ["x"]}'),
    ("p.json", '[{"image_id": 1, "caption": "a dog"}, {"image_id": 9, "caption": "a cat"}]', "r.json", '{"1": ["x"]}'),
    ("p.json", '["a dog", "a cat", "a man"]', "r.json", '[["x"], ["y"]]'),
    ("p.json", '["a dog", ""]', "r.json", '[["x"], ["y"]]'),
    ("p.json", '[{"image_id": 1, "caption": "a dog"}, {"caption": "a cat"}]', "r.json", '{"1": ["x"]}'),
    ("p.json", '{"1": ["a dog"], "1": ["a cat"]}', "r.json", '{"1": ["x"]}'),
    ("p.json", '["a dog", "a \udcff cat"]', "r.json", '[["x"], ["y"]]'),
    ("p.jsonl", '{"image_id": 1, "caption": "a dog"}\n{"image_id": 2, "caption": 7}\n{bad\n', "r.json", '{}'),
    ("p.jsonl", '{"image_id": 1, "caption": "a dog"}\n', "r.json", '{"annotations": 3}'),
    ("p.csv", 'image_id,caption\n1,a dog\n2,"a cat\n', "r.json", '{"1": ["x"]}'),
    ("p.csv", 'image_id,caption\n1,a dog\n2,a cat,more\n', "r.json", '{"1": ["x"]}'),
    ("p.csv", 'image_id,caption\n,a dog\n2,\n', "r.json", '{"1": ["x"]}'),
    ("p.csv", 'image_id,caption\n1,a dog\n', "r.csv", 'image_id,reference\n1,\n'),
    ("p.json", '["a dog"]', "r.json", '[{"image_id": 1, "references": ["x"]}, ["y"]]'),
    ("p.json", '["a dog"]', "missing.json", None),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_is_refused_in_the_in_memory_words(tmp_path, capsys, monkeypatch, case):
    pred_name, pred_text, ref_name, ref_text = BAD[case]
    pred_path, ref_path = tmp_path / pred_name, tmp_path / ref_name
    pred_path.write_bytes(pred_text.encode("utf-8", "surrogateescape"))
    if ref_text is not None:
        ref_path.write_text(ref_text, encoding="utf-8")
    common = ["--predictions", pred_path, "--references", ref_path, "--metrics", "bleu", "--no-language-check"]
    rc_mem, _, err_mem = _score(capsys, monkeypatch, "100", *common)
    rc_chunk, _, err_chunk = _score(capsys, monkeypatch, "0", *common)
    assert rc_mem == rc_chunk == 1
    error = [line for line in err_mem.splitlines() if "error" in line]
    assert len(error) == 1 and "Traceback" not in err_chunk
    assert [line for line in err_chunk.splitlines() if "error" in line] == error


def _peak_mib(tmp_path: Path, n: int) -> float:
    """Peak RSS (MiB) of ``capeval score`` on ``n`` tiny predictions in the chunked route: the largest process of its
    tree (``ru_maxrss`` of a wrapper's children: the main process and the chunk workers it waited for)."""
    import os
    import subprocess
    import sys

    pred_path, ref_path = tmp_path / f"p{n}.jsonl", tmp_path / f"r{n}.jsonl"
    with pred_path.open("w") as preds, ref_path.open("w") as refs:
        for i in range(n):
            preds.write(f'{{"image_id": {i}, "caption": "a dog {i % 97} runs"}}\n')
            refs.write(f'{{"image_id": {i}, "references": ["a dog runs {i % 13}", "a cat"]}}\n')
    probe = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else -1)")
    command = [sys.executable, "-c", probe, sys.executable, "-m", "capeval", "score", "--predictions", str(pred_path),
               "--references", str(ref_path), "--metrics", "rouge_l", "--no-language-check", "--json",
               str(tmp_path / "out.json"), "--per-caption"]
    done = subprocess.run(command, env=dict(os.environ, CAPEVAL_SCORE_IN_MEMORY_MAX="0"), capture_output=True,
                          text=True, timeout=300, check=False)
    peak = int(done.stdout.split()[-1])
    assert peak > 0, done.stderr
    return peak / 1024


def test_the_main_process_memory_does_not_grow_with_the_rows(tmp_path):
    small, large = _peak_mib(tmp_path, 20_000), _peak_mib(tmp_path, 80_000)
    assert large - small < 40, (small, large)  # 4x the rows; the old route held ~1.4 KB per row (+ ~80 MiB here)


def _score_in_a_pool_worker(args: list[str]) -> int:
    import multiprocessing

    assert multiprocessing.current_process().daemon
    return main(args)


def test_the_chunked_route_in_a_pool_worker_reads_both_files_itself(tmp_path, monkeypatch):
    """A multiprocessing pool's worker (daemonic: it may not start processes) reads the references after the
    predictions, in itself, and gives the same result as a process that reads them beside it."""
    import multiprocessing

    pred_path, ref_path = _files(tmp_path, n=300)
    monkeypatch.setenv("CAPEVAL_SCORE_IN_MEMORY_MAX", "100")
    common = ["score", "--predictions", str(pred_path), "--references", str(ref_path), "--metrics", METRICS,
              "--no-language-check", "--json"]
    assert main([*common, str(tmp_path / "here.json")]) == 0
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_score_in_a_pool_worker, ([*common, str(tmp_path / "pool.json")],)) == 0
    here, pooled = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("here", "pool"))
    assert pooled == here and len(here["image_ids"]) == 300
