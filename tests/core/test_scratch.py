"""Scratch folders (``capeval.scratch``): removed at the end of their block, and those of a process killed with SIGKILL
removed by the next one of their prefix, never a folder whose process runs, a fresh one, one without the owner lock
or a link; a CIDEr-D table received by an engine's worker leaves no file behind."""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from capeval import scratch
from capeval.scratch import OWNER_LOCK, STALE_AFTER_S, scratch_folder, sweep

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock")

HOLDER = textwrap.dedent("""
    import sys, time
    from capeval.scratch import scratch_folder
    with scratch_folder(sys.argv[1], sys.argv[2]) as folder:
        (folder / "work.bin").write_bytes(b"x" * 1000)
        print(folder, flush=True)
        time.sleep(120)
""")


def _holder(prefix: str, parent: Path) -> tuple[subprocess.Popen, Path]:
    """A process inside ``scratch_folder(prefix, parent)``, and its folder."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, prefix, str(parent)], stdout=subprocess.PIPE, text=True)
    return process, Path(process.stdout.readline().strip())


def _age(folder: Path, seconds: float = STALE_AFTER_S + 5) -> None:
    past = time.time() - seconds
    os.utime(folder, (past, past))


def test_the_folder_is_removed_when_the_block_ends_also_on_an_error(tmp_path):
    with scratch_folder("capeval-t-", tmp_path) as folder:
        assert folder.is_dir() and folder.parent == tmp_path and (folder / OWNER_LOCK).is_file()
        (folder / "data").write_text("x")
    assert not folder.exists()
    with pytest.raises(KeyError), scratch_folder("capeval-t-", tmp_path) as folder:
        raise KeyError("stop")
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_killed_processs_folder_is_removed_by_the_next_one_a_running_ones_is_kept(tmp_path):
    killed, left = _holder("capeval-t-", tmp_path)
    running, held = _holder("capeval-t-", tmp_path)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert (left / "work.bin").is_file()  # SIGKILL: nothing ran to remove it
        _age(left)
        _age(held)
        assert sweep("capeval-t-", tmp_path) == [left]
        assert not left.exists() and (held / "work.bin").is_file()
    finally:
        running.kill()
        running.wait()
    _age(held)
    with scratch_folder("capeval-t-", tmp_path):
        pass  # the first block of this prefix and parent in this process sweeps
    assert not held.exists()


def test_fresh_folders_folders_without_the_lock_and_links_are_never_swept(tmp_path):
    killed, fresh = _holder("capeval-t-", tmp_path)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    unlocked = tmp_path / "capeval-t-other-program"
    unlocked.mkdir()
    (unlocked / "theirs.txt").write_text("keep")
    target = tmp_path / "target"
    target.mkdir()
    (target / OWNER_LOCK).write_text("")
    link = tmp_path / "capeval-t-link"
    link.symlink_to(target, target_is_directory=True)
    for path in (unlocked, target):
        _age(path)
    os.utime(link, (time.time() - 999, time.time() - 999), follow_symlinks=False)
    assert sweep("capeval-t-", tmp_path) == []  # the killed one is under a minute old
    assert fresh.is_dir() and unlocked.is_dir() and target.is_dir() and link.is_symlink()
    _age(fresh)
    assert sweep("capeval-t-", tmp_path) == [fresh]
    assert sweep("capeval-t-other", tmp_path) == [] and (unlocked / "theirs.txt").is_file()


def test_the_default_parent_is_the_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(scratch, "_SWEPT", set())
    with scratch_folder("capeval-t-") as folder:
        assert folder.parent == tmp_path


def test_a_table_received_by_a_worker_leaves_no_file_and_still_answers(tmp_path, monkeypatch):
    import dataclasses

    from capeval.batch import CaptionBatch
    from capeval.coco.dataset_pass import open_table
    from capeval.coco.document_frequency import reference_document_frequency
    from capeval.coco.ngrams import batch_ngrams
    from capeval.coco.disk_df import DiskDocumentFrequency
    from capeval.dataset_scoring.chunks import new_run
    from capeval.dataset_scoring.first_pass import count_rows, options_with_table_bytes, table_of

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    run = new_run(data=None, split=None, folder=tmp_path / "run", selected={"cider_d": ["cider_d"]}, options={},
                  columns={"prediction": "prediction", "references": "references", "id": None, "image": None},
                  chunk_size=10, on_error="raise", progress=False, language_check=False, score_kwargs={"empty": "error", "cleanup": "none",
                                                                                "tokenizer": "ptb"})
    preds, refs = ["a dog runs", "a cat sits"], [["a dog is running", "the dog runs"], ["a cat sits on a mat"]]
    table = table_of(lambda counter: count_rows(run, preds, refs, counter))
    options = options_with_table_bytes(dataclasses.replace(run, folder=tmp_path / "unused"), table)
    received = options["cider_df"]
    assert isinstance(received, DiskDocumentFrequency) and list((tmp_path / "tmp").iterdir()) == []
    (tmp_path / "whole.bin").write_bytes(table)
    whole = open_table(tmp_path / "whole.bin")
    ngrams = batch_ngrams(CaptionBatch(preds, refs, cleanup="none", tokenizer="ptb", progress=False), 4)
    grams = [*ngrams.table.gram_strings(), "never seen"]
    expected = [*reference_document_frequency(ngrams)[0].tolist(), 0]
    assert max(expected) == 2 and expected.count(0) > 1  # "a": both rows; the predictions' own grams: none
    assert received.lookup(grams).tolist() == whole.lookup(grams).tolist() == expected
    with pytest.raises(TypeError, match="detached from its file"):
        pickle.dumps(received)
    assert pickle.loads(pickle.dumps(whole)).lookup(grams).tolist() == expected
