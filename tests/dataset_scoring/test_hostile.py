"""score-dataset and hostile input: keys twice in a JSON object, non-regular files, invalid UTF-8 and
broken parquet named in one line; unreadable images skipped with --on-error skip and named by their dataset row and
id; SIGINT / SIGTERM / SIGKILL of a run over several processes leave no traceback, no worker and no half-written
chunk, and the rerun resumes to the uninterrupted result."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import capeval
from support.processes import children, cmdline, gone_within, running

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

sys.path.insert(0, str(Path(__file__).parent))
from support.caption_rows import make_rows, shards, write_jsonl  # noqa: E402


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capeval", "score-dataset", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "CAPEVAL_DEBUG": ""})


def _error_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith("capeval score-dataset: error: "), \
        done.stderr
    return lines[0]


# ---- input files ----------------------------------------------------------------------------------------------

def test_a_key_twice_in_a_jsonl_row_is_refused_naming_file_line_and_key(tmp_path):
    lines = [json.dumps(r) for r in make_rows(5)]
    lines[2] = lines[2][:-1] + ', "prediction": "a cat"}'
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        capeval.score_dataset(str(data), metrics="bleu", output_dir=tmp_path / "out", language_check=False)
    assert str(err.value).startswith(f"{data}:3: the key 'prediction' appears twice")
    listed = tmp_path / "list.json"
    listed.write_text('[{"id": 1, "id": 2, "prediction": "a dog", "references": ["a dog"]}]', encoding="utf-8")
    with pytest.raises(ValueError, match=f"{listed}: the key 'id' appears twice"):
        capeval.score_dataset(str(listed), metrics="bleu", output_dir=tmp_path / "out2", language_check=False)


def test_invalid_utf8_names_the_line_and_the_byte_offset(tmp_path):
    rows = [json.dumps(r).encode() for r in make_rows(4)]
    rows[1] = rows[1].replace(b'"prediction": "', b'"prediction": "caf\xe9 ')
    data = tmp_path / "rows.jsonl"
    data.write_bytes(b"\n".join(rows) + b"\n")
    offset = data.read_bytes().index(b"\xe9")
    done = _cli(str(data), "--out", str(tmp_path / "out"), "--metrics", "bleu", "--no-language-check")
    assert f"{data}:2: not UTF-8 text (invalid byte 0xe9 at byte offset {offset:,})" in _error_line(done)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_or_a_device_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    done = _cli(str(fifo), "--out", str(tmp_path / "out"), "--metrics", "bleu", timeout=60)
    assert "is a FIFO (named pipe), not a regular file" in _error_line(done)
    if os.path.exists("/dev/zero"):
        done = _cli("/dev/zero", "--out", str(tmp_path / "out"), "--metrics", "bleu", timeout=60)
        assert "/dev/zero is a character device" in _error_line(done)


def test_a_jsonl_line_above_the_limit_is_refused(tmp_path, monkeypatch):
    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(5))
    monkeypatch.setenv("CAPEVAL_MAX_INPUT_BYTES", "60")
    with pytest.raises(ValueError, match=r"rows.jsonl:1: a line of more than 60 bytes"):
        capeval.score_dataset(str(data), metrics="bleu", output_dir=tmp_path / "out", language_check=False)


def test_a_broken_parquet_file_is_named_in_one_line(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = make_rows(400)
    table = pa.table({k: [r[k] for r in rows] for k in rows[0]})
    garbage = tmp_path / "garbage" / "part-0.parquet"
    garbage.parent.mkdir()
    garbage.write_bytes(b"PAR1 this is not parquet")
    done = _cli(str(garbage.parent), "--out", str(tmp_path / "out"), "--metrics", "bleu", "--no-language-check")
    assert f"error: {garbage}: not a readable parquet file (" in _error_line(done)
    # a sound footer, damaged pages: the error comes when the row group is read
    damaged = tmp_path / "damaged" / "part-0.parquet"
    damaged.parent.mkdir()
    pq.write_table(table, damaged, compression="snappy", row_group_size=100)
    body = bytearray(damaged.read_bytes())
    for i in range(40, len(body) // 2, 7):
        body[i] ^= 0x5A
    damaged.write_bytes(bytes(body))
    with pytest.raises(ValueError) as err:
        capeval.score_dataset(str(damaged.parent), metrics="bleu", output_dir=tmp_path / "out2", language_check=False)
    assert str(err.value).startswith(f"{damaged}: not a readable parquet file (") and "\n" not in str(err.value)


# ---- images ---------------------------------------------------------------------------------------------------

def _image_rows(tmp_path: Path) -> tuple[Path, list[dict]]:
    """Five rows, ids img0..img4; row 3's image is not an image, row 1's does not exist."""
    from capeval.io import example_images

    folder = tmp_path / "data"
    folder.mkdir()
    photos = example_images()
    rows = []
    for i in range(5):
        name = f"{i}.jpg"
        if i == 3:
            (folder / name).write_bytes(b"this is no JPEG")
        elif i != 1:
            (folder / name).write_bytes(Path(photos[i % len(photos)]).read_bytes())
        rows.append({"id": f"img{i}", "prediction": "a cat sitting on a sofa", "references": ["a cat on a sofa"],
                     "image": name})
    return write_jsonl(folder / "rows.jsonl", rows), rows


def test_unreadable_images_name_the_dataset_row_and_id(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("PIL")
    data, _ = _image_rows(tmp_path)
    # chunks of 2: row 3 is the second row of chunk 1, row 1 the second of chunk 0 (no images[1] anywhere)
    with pytest.raises((ValueError, FileNotFoundError)) as err:
        capeval.score_dataset(str(data), metrics="critic", output_dir=tmp_path / "out", image_column="image",
                              chunk_size=2, language_check=False)
    message = str(err.value)
    assert message.startswith("row 1 (id 'img1'): ") and "images[" not in message and "1.jpg" in message
    done = _cli(str(data), "--out", str(tmp_path / "out-skip"), "--metrics", "critic", "--image-column", "image",
                "--chunk-size", "2", "--on-error", "skip", "--no-language-check")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    result = json.loads((tmp_path / "out-skip" / "result.json").read_text(encoding="utf-8"))
    assert result["rows"] == 3 and result["skipped"]["count"] == 2
    skipped = {r["row"]: r for r in result["skipped"]["rows"]}
    assert sorted(skipped) == [1, 3] and skipped[1]["id"] == "img1" and skipped[3]["id"] == "img3"
    assert "no such image file" in skipped[1]["why"] and "not a readable image" in skipped[3]["why"]
    assert "images[" not in skipped[3]["why"]
    if os.path.exists("/dev/zero"):  # an image path naming a device is refused unread (never read until MemoryError)
        kept = (data.parent / "2.jpg").read_bytes()
        (data.parent / "2.jpg").unlink()
        (data.parent / "2.jpg").symlink_to("/dev/zero")
        from capeval.dataset_scoring.chunks import image_problem as _image_problem

        assert _image_problem(str(data.parent / "2.jpg"), 2, "image") == \
            f"image ({data.parent / '2.jpg'}): cannot read the file: a character device, not a regular file; pass an " \
            "image file"  # the rule of capeval.models.images, said as for any image door
        (data.parent / "2.jpg").unlink()
        (data.parent / "2.jpg").write_bytes(kept)
    assert shards(tmp_path / "out-skip")["id"] == ["img0", "img2", "img4"]
    # the scores of the rest are capeval.score's on those rows
    folder = data.parent
    whole = capeval.score(["a cat sitting on a sofa"] * 3, [["a cat on a sofa"]] * 3, metrics="critic",
                          images=[str(folder / f"{i}.jpg") for i in (0, 2, 4)], language_check=False)
    assert result["critic"] == pytest.approx(whole["critic"], abs=1e-6)  # float32 batches of 1 here, of 3 there
    # with raise, the row of an unreadable (not missing) image is named too
    (folder / "1.jpg").write_bytes(Path(folder / "0.jpg").read_bytes())
    done = _cli(str(data), "--out", str(tmp_path / "out-raise"), "--metrics", "critic", "--image-column", "image",
                "--chunk-size", "2", "--no-language-check")
    line = _error_line(done)
    assert "row 3 (id 'img3'): " in line and "not a readable image" in line and "images[" not in line


def test_a_metric_s_image_error_is_renamed_to_the_dataset_row_from_its_fields():
    from capeval.dataset_scoring.chunks import in_row_words as _in_row_words
    from capeval.models.images import ImageInputError

    error = ImageInputError(1, "x.jpg", " is not a readable image (OSError: truncated).")
    assert str(error) == "images[1] (x.jpg) is not a readable image (OSError: truncated)."
    renamed = _in_row_words(error, [0, 3], ["img0", "img3"], "photo")
    assert isinstance(renamed, ValueError)
    assert str(renamed) == "row 3 (id 'img3'): photo (x.jpg) is not a readable image (OSError: truncated)."
    # only the fields count: a message that merely mentions images[1] is the metric's own error
    assert _in_row_words(ValueError("images[1] (x.jpg) is not a readable image"), [0, 3], ["a", "b"], "photo") is None
    assert _in_row_words(ValueError("predictions[0] is empty"), [0], ["a"], "photo") is None


# ---- signals --------------------------------------------------------------------------------------------------

def _is_worker(pid: int) -> bool:
    """A spawned multiprocessing worker (not multiprocessing's resource tracker, which leaves when its pipe closes)."""
    return b"spawn_main" in cmdline(pid)


def _done_shards(out: Path) -> int:
    return len(list((out / "shards").glob("part-*.parquet"))) if (out / "shards").is_dir() else 0


def _all_shards_whole(out: Path) -> None:
    import pyarrow.parquet as pq

    for shard in (out / "shards").glob("part-*.parquet"):
        pq.read_table(shard)  # a half-written shard would not read


def _start_and_signal(args: list[str], out: Path, signum: int, *, group: bool = False):
    """Start score-dataset, wait until it has written a new shard (its workers are busy), send ``signum`` (to its
    process group when ``group``, as Ctrl-C at a terminal does); ``(process, its worker pids, stderr)``."""
    before = _done_shards(out)
    proc = subprocess.Popen([sys.executable, "-m", "capeval", "score-dataset", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "CAPEVAL_DEBUG": ""})
    deadline = time.monotonic() + 180
    while _done_shards(out) <= before and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"finished before the signal: {proc.communicate()}"
    kids = [pid for pid in children(proc.pid) if running(pid)]
    workers = [pid for pid in kids if _is_worker(pid)]
    assert len(workers) == 2, kids
    if group:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    if signum == signal.SIGKILL:
        return proc, workers, ""
    _, err = proc.communicate(timeout=60)
    assert not gone_within(kids, 5), "a child process outlived the run"
    return proc, workers, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG: Linux")
def test_sigint_sigterm_and_sigkill_of_a_run_over_processes(tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(40000, seed=3))
    out = tmp_path / "out"
    args = [str(data), "--out", str(out), "--metrics", "bleu", "--processes", "2", "--chunk-size", "400",
            "--no-language-check", "--json", str(tmp_path / "r.json")]
    # Ctrl-C at a terminal: SIGINT to the whole process group
    proc, workers, err = _start_and_signal(args, out, signal.SIGINT, group=True)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert err.strip().splitlines()[-1] == "capeval score-dataset: interrupted", err
    assert not [pid for pid in workers if running(pid)], "workers left running after SIGINT"
    _all_shards_whole(out)
    # SIGTERM to the parent only
    proc, workers, err = _start_and_signal(args, out, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert err.strip().splitlines()[-1] == "capeval score-dataset: terminated", err
    assert not [pid for pid in workers if running(pid)], "workers left running after SIGTERM"
    _all_shards_whole(out)
    # SIGKILL of the parent: its workers die with it
    proc, workers, _ = _start_and_signal(args, out, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert not gone_within(workers, 5), "workers outlived their SIGKILLed parent"
    _all_shards_whole(out)
    assert _done_shards(out) < 100, "the workers ran on to the end after their parent was killed"
    assert not (tmp_path / "r.json").exists()
    # the rerun resumes to the uninterrupted result
    done = _cli(*args)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    resumed = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    whole = capeval.score_dataset(str(data), metrics="bleu", output_dir=tmp_path / "whole", chunk_size=400,
                                  language_check=False, progress=False)
    assert resumed == whole
    assert shards(out) == shards(tmp_path / "whole")


def test_readable_images_are_decoded_once(tmp_path, monkeypatch):
    """The rows' images are read before a chunk is scored and decoded by the metric only (a check that decoded them
    too cost a decode per row: 2.4 ms for a 640×480 JPEG here, as much as the critic on cached features)."""
    pytest.importorskip("torch")
    pytest.importorskip("PIL")
    from capeval.models import images as images_module

    import uuid

    import numpy as np
    from PIL import Image

    folder = tmp_path / "data"
    folder.mkdir()
    rng = np.random.default_rng(uuid.uuid4().int % 2**32)  # pixels no earlier test encoded (features are cached)
    photos = []
    for i in range(3):
        photos.append(str(folder / f"{i}.png"))
        Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(photos[-1])
    rows = [{"id": f"img{i}", "prediction": "a cat", "references": ["a cat on a sofa"], "image": photos[i]}
            for i in range(len(photos))]
    data = write_jsonl(folder / "rows.jsonl", rows)
    decoded: list[str] = []
    real = images_module.ImageItem.decode

    def counted(item):
        decoded.append(item.key)
        return real(item)

    monkeypatch.setattr(images_module.ImageItem, "decode", counted)
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))  # no cached features: every image is encoded
    result = capeval.score_dataset(str(data), metrics="critic", output_dir=tmp_path / "out", image_column="image",
                                   chunk_size=2, language_check=False, progress=False)
    assert result["rows"] == len(photos)
    assert len(decoded) == len(set(decoded)) == len(photos)
