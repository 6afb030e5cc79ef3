"""Hostile prediction / reference / image-list files: a JSON object naming a key twice, a FIFO, a device,
a file above the size limit, bytes that are not UTF-8 are each refused in one line naming the file (and the line or
byte offset), never read last-value-wins, never read until memory runs out, never waited on."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from capeval.io import InputFormatError, load_image_list, load_predictions, load_references

READERS = [load_predictions, load_references]


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("reader", READERS)
def test_a_duplicate_key_in_a_json_object_is_refused_naming_it(tmp_path, reader):
    path = tmp_path / "keyed.json"
    path.write_text('{"1": ["a dog"], "1": ["a cat"]}', encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        reader(path)
    message = _one_line(err.value)
    assert str(path) in message and "'1'" in message and "twice" in message
    # pretty-printed over several lines, too
    path.write_text('{\n  "7": "a dog",\n  "8": "a cat",\n  "7": "a bird"\n}\n', encoding="utf-8")
    with pytest.raises(InputFormatError, match="'7' appears twice"):
        reader(path)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("line", [1, 3])
def test_a_duplicate_key_in_a_jsonl_line_names_the_line(tmp_path, reader, line):
    rows = [{"image_id": i, "caption": f"a dog number {i}"} for i in range(4)]
    lines = [json.dumps(r) for r in rows]
    lines[line - 1] = lines[line - 1][:-1] + ', "caption": "a cat"}'
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        reader(path)
    assert f"{path}:{line}: the key 'caption' appears twice" in _one_line(err.value)


def test_a_duplicate_key_nested_in_coco_results_and_in_an_image_list(tmp_path):
    path = tmp_path / "results.json"
    path.write_text('[{"image_id": 1, "caption": "a dog"}, {"image_id": 2, "image_id": 3, "caption": "a cat"}]',
                    encoding="utf-8")
    with pytest.raises(InputFormatError, match="'image_id' appears twice"):
        load_predictions(path)
    annotations = tmp_path / "captions.json"
    annotations.write_text('{"annotations": [], "annotations": [{"image_id": 1, "caption": "a dog"}]}',
                           encoding="utf-8")
    with pytest.raises(InputFormatError, match="'annotations' appears twice"):
        load_references(annotations)
    images = tmp_path / "images.json"
    images.write_text('{"a": "x.jpg", "a": "y.jpg"}', encoding="utf-8")
    with pytest.raises(InputFormatError, match=f"{images}: the key 'a' appears twice"):
        load_image_list(images)


def test_distinct_keys_still_read(tmp_path):
    path = tmp_path / "keyed.json"
    path.write_text('{"1": ["a dog"], "2": ["a cat"]}', encoding="utf-8")
    assert load_predictions(path) == (["1", "2"], ["a dog", "a cat"])


@pytest.mark.parametrize("reader", [*READERS, load_image_list])
def test_a_device_is_refused_at_once(reader):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    with pytest.raises(InputFormatError) as err:
        reader("/dev/zero")
    assert _one_line(err.value).startswith("/dev/zero is a character device, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("reader", [*READERS, load_image_list])
def test_a_fifo_is_refused_without_blocking(tmp_path, reader):
    fifo = tmp_path / "predictions.json"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    thread = threading.Thread(target=lambda: outcome.append(pytest.raises(InputFormatError, reader, fifo).value),
                              daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # it blocked on the FIFO: unblock it (a writer) before failing
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert "FIFO" in _one_line(outcome[0]) and str(fifo) in str(outcome[0])


def test_a_directory_and_a_missing_file(tmp_path):
    with pytest.raises(InputFormatError, match="is a directory"):
        load_predictions(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_predictions(tmp_path / "nope.json")


@pytest.mark.parametrize("reader", [*READERS, load_image_list])
def test_a_file_above_the_limit_is_refused_naming_it(tmp_path, monkeypatch, reader):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(["a dog on a beach"] * 100), encoding="utf-8")
    monkeypatch.setenv("CAPEVAL_MAX_INPUT_BYTES", "1000")
    with pytest.raises(InputFormatError) as err:
        reader(path)
    message = _one_line(err.value)
    assert str(path) in message and "above the limit of 1,000 bytes" in message and "CAPEVAL_MAX_INPUT_BYTES" in message
    monkeypatch.setenv("CAPEVAL_MAX_INPUT_BYTES", "100000")
    assert len(load_predictions(path)[1]) == 100
    monkeypatch.setenv("CAPEVAL_MAX_INPUT_BYTES", "lots")
    with pytest.raises(ValueError, match="CAPEVAL_MAX_INPUT_BYTES must be a positive number"):
        load_predictions(path)


def test_the_limit_is_documented():
    import capeval.io

    assert capeval.io.MAX_INPUT_BYTES == 1 << 30
    assert "MAX_INPUT_BYTES" in capeval.io.__doc__ and "CAPEVAL_MAX_INPUT_BYTES" in capeval.io.__doc__


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_invalid_utf8_names_the_file_offset_and_line(tmp_path, suffix):
    path = tmp_path / f"preds{suffix}"
    body = {".json": b'[\n"a dog",\n"a caf\xe9"\n]', ".jsonl": b'"a dog"\n"a caf\xe9"\n',
            ".csv": b'caption\na dog\na caf\xe9\n'}[suffix]
    path.write_bytes(body)
    with pytest.raises(InputFormatError) as err:
        load_predictions(path)
    offset = body.index(b"\xe9")
    line = body[:offset].count(b"\n") + 1
    assert _one_line(err.value) == (f"{path}: not UTF-8 text (invalid byte 0xe9 at byte offset {offset}, "
                                    f"line {line}).")


def test_the_command_line_refuses_dev_zero_in_one_line(tmp_path):
    refs = tmp_path / "refs.json"
    refs.write_text('[["a dog"]]', encoding="utf-8")
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    done = subprocess.run([sys.executable, "-m", "capeval", "score", "--predictions", "/dev/zero", "--references",
                           str(refs), "--metrics", "bleu"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CAPEVAL_DEBUG": ""})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "error: /dev/zero is a character device" in lines[0], done.stderr
    dup = tmp_path / "preds.json"
    dup.write_text('{"1": ["a dog"], "1": ["a cat"]}', encoding="utf-8")
    keyed = tmp_path / "refs-keyed.json"
    keyed.write_text('{"1": ["a dog"]}', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "capeval", "score", "--predictions", str(dup), "--references",
                           str(keyed), "--metrics", "bleu"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CAPEVAL_DEBUG": ""})
    assert done.returncode == 1 and "'1' appears twice" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_image_list_naming_a_device_a_fifo_or_a_folder_says_what_it_names(tmp_path):
    """``capeval score --images LIST``: an entry that exists but is not a regular file is named for what it is (not
    "does not exist")."""
    import os

    from capeval.io import InputFormatError, load_image_list

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe.png")
    (tmp_path / "zero.png").symlink_to("/dev/zero")
    for name, words in (("folder", "a directory"), ("pipe.png", "a FIFO"), ("zero.png", "a character device")):
        listing = tmp_path / f"list-{name}.txt"
        listing.write_text(f"{name}\n")
        with pytest.raises(InputFormatError, match=rf"line 1: .*{name} is {words}.*, not an image file"):
            load_image_list(listing)
    listing = tmp_path / "missing.txt"
    listing.write_text("gone.png\n")
    with pytest.raises(FileNotFoundError, match="gone.png does not exist"):
        load_image_list(listing)
