"""``score_dataset(engine="ray")`` / ``capeval score-dataset --engine ray`` on a real local Ray cluster: the local
engine's output (shards and result.json) for every metric that runs without downloaded weights and for an image
metric on random weights, folders resumed across engines, a killed actor recovered, bad rows named in one line."""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

import capeval
from support.caption_rows import make_rows, rows_with_images, write_jsonl

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

#: Every metric that runs without downloaded weights and can be chunked (SPICE-U is a whole-set metric).
WEIGHTLESS = ["bleu", "meteor", "rouge_l", "cider_d", "spice", "spider", "caption_length"]
TEXT_METRICS = ["bleu", "meteor", "rouge_l", "cider_d"]


def parquet_files(folder: Path) -> dict[str, tuple]:
    """Each shard's table and metadata (the chunk's record)."""
    import pyarrow.parquet as pq

    out = {}
    for path in sorted((folder / "shards").glob("part-*.parquet")):
        table = pq.read_table(path)
        out[path.name] = (table.to_pydict(), table.schema.metadata)
    return out


def assert_same_output(a: Path, b: Path, result_a: dict, result_b: dict, float32: tuple[str, ...] = ()) -> None:
    """The same shards (records included) and ``result.json``; the keys ``float32`` (a model's scores) equal to float32
    rounding only: an actor's matrix products use the threads of the one CPU Ray gives it, which can change the last
    bits."""
    files_a, files_b = parquet_files(a), parquet_files(b)
    assert files_a.keys() == files_b.keys()
    for name, (table_a, meta_a) in files_a.items():
        table_b, meta_b = files_b[name]
        assert meta_a == meta_b and table_a.keys() == table_b.keys(), name
        for key, column in table_a.items():
            if key in float32:
                assert table_b[key] == pytest.approx(column, rel=1e-6, abs=1e-7), (name, key)
            else:
                assert table_b[key] == column, (name, key)
    json_a, json_b = (json.loads((folder / "result.json").read_text()) for folder in (a, b))
    for key in float32:
        assert json_b.pop(key) == pytest.approx(json_a.pop(key), rel=1e-6), key
    assert json_a == json_b
    for key, value in result_a.items():
        if isinstance(value, float):
            assert result_b[key] == pytest.approx(value, rel=1e-6 if key in float32 else 0, abs=1e-9), key


def test_every_weightless_metric_gives_the_local_engines_output(ray_cluster, tmp_path):
    pytest.importorskip("spacy")
    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(60, seed=4))
    kwargs = dict(metrics=WEIGHTLESS, chunk_size=16, language_check=False, progress=False)
    local = capeval.score_dataset(str(data), output_dir=tmp_path / "local", **kwargs)
    on_ray = capeval.score_dataset(str(data), output_dir=tmp_path / "ray", engine="ray", ray_actors=2, **kwargs)
    assert on_ray["rows"] == 60 and on_ray["chunks"] == 4 and on_ray["signature"] == local["signature"]
    assert_same_output(tmp_path / "local", tmp_path / "ray", local, on_ray)
    assert (tmp_path / "ray" / "cider-df.bin").is_file() and not list((tmp_path / "ray").glob(".tmp-*"))
    rows = make_rows(60, seed=4)
    whole = capeval.score([r["prediction"] for r in rows], [r["references"] for r in rows], metrics=WEIGHTLESS,
                          language_check=False)
    for key, value in whole.items():
        if isinstance(value, float):
            assert on_ray[key] == pytest.approx(value, abs=1e-9), key


def test_a_folder_begun_by_one_engine_is_finished_by_the_other(ray_cluster, tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(200, seed=5))
    kwargs = dict(metrics=TEXT_METRICS, chunk_size=30, language_check=False, progress=False)
    local = capeval.score_dataset(str(data), output_dir=tmp_path / "local", **kwargs)
    begun = tmp_path / "begun"
    capeval.score_dataset(str(data), output_dir=begun, **kwargs)
    for k in (1, 4, 6):  # chunks lost (as if the run had been killed before them); the result not written yet
        (begun / "shards" / f"part-{k:06d}.parquet").unlink()
    (begun / "result.json").unlink()
    (begun / "cider-df.bin").unlink()  # the first pass too: counted again on Ray, the same table
    kept = {p.name: p.stat().st_mtime_ns for p in (begun / "shards").iterdir()}
    finished = capeval.score_dataset(str(data), output_dir=begun, engine="ray", **kwargs)
    assert all((begun / "shards" / name).stat().st_mtime_ns == t for name, t in kept.items())  # not scored again
    assert_same_output(tmp_path / "local", begun, local, finished)


def _kill_a_scoring_actor(killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first Ray worker process seen scoring a chunk (its title ``ray::ChunkWorker.score``)."""
    while not stop.is_set() and not killed:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                title = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if title.startswith(b"ray::ChunkWorker.score"):
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
                return
        time.sleep(0.005)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the actor's process in /proc")
def test_an_actor_killed_while_scoring_is_restarted_and_its_chunk_scored_again(ray_cluster, tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(600, seed=6))
    kwargs = dict(metrics=TEXT_METRICS, chunk_size=50, language_check=False, progress=False)
    local = capeval.score_dataset(str(data), output_dir=tmp_path / "local", **kwargs)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_a_scoring_actor, args=(killed, stop), daemon=True)
    killer.start()
    try:
        on_ray = capeval.score_dataset(str(data), output_dir=tmp_path / "ray", engine="ray", ray_actors=2, **kwargs)
    finally:
        stop.set()
        killer.join()
    assert killed, "no scoring actor was seen to kill"
    assert_same_output(tmp_path / "local", tmp_path / "ray", local, on_ray)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the actor's process in /proc")
def test_a_chunk_whose_actor_dies_more_often_than_retried_fails_naming_its_rows(ray_cluster, tmp_path, monkeypatch):
    import capeval.dataset_scoring.ray_engine as ray_engine

    monkeypatch.setattr(ray_engine, "TASK_RETRIES", 0)
    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(600, seed=6))
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_a_scoring_actor, args=(killed, stop), daemon=True)
    killer.start()
    try:
        with pytest.raises(RuntimeError, match=r"score_dataset: chunk \d+ \(rows \d+-\d+\): its Ray actor died 1 "
                                               r"times while scoring it .*the same call resumes\.$"):
            capeval.score_dataset(str(data), output_dir=tmp_path / "ray", metrics=TEXT_METRICS, chunk_size=50,
                                  language_check=False, progress=False, engine="ray", ray_actors=2)
    finally:
        stop.set()
        killer.join()
    assert killed
    # the same call resumes what was written and finishes
    result = capeval.score_dataset(str(data), output_dir=tmp_path / "ray", metrics=TEXT_METRICS, chunk_size=50,
                                   language_check=False, progress=False, engine="ray", ray_actors=2)
    assert result["rows"] == 600


def test_bad_rows_are_named_in_one_line_or_skipped(ray_cluster, tmp_path):
    rows = make_rows(40, seed=7)
    rows[23]["references"] = []
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(ValueError) as caught:
        capeval.score_dataset(str(data), output_dir=tmp_path / "raise", metrics=["bleu"], chunk_size=10,
                              language_check=False, progress=False, engine="ray")
    assert str(caught.value).startswith("row 23 (id 'img00023'): references is an empty list, not a reference ")
    assert "\n" not in str(caught.value) and type(caught.value).__module__.startswith("capeval")
    kwargs = dict(metrics=["bleu", "cider_d"], chunk_size=10, language_check=False, progress=False, on_error="skip")
    local = capeval.score_dataset(str(data), output_dir=tmp_path / "local", **kwargs)
    on_ray = capeval.score_dataset(str(data), output_dir=tmp_path / "skip", engine="ray", **kwargs)
    assert on_ray["skipped"]["rows"] == [{"row": 23, "id": "img00023", "why": local["skipped"]["rows"][0]["why"]}]
    assert_same_output(tmp_path / "local", tmp_path / "skip", local, on_ray)


def test_an_image_metric_on_random_weights_gives_the_local_engines_output(ray_cluster, tmp_path):
    clip_model, rows = rows_with_images(tmp_path / "vl", 12, seed=8)
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    kwargs = dict(metrics=["clip_s", "ref_clip_s", "bleu"], image_column="image", chunk_size=5, language_check=False,
                  progress=False, clip_model=clip_model)
    local = capeval.score_dataset(str(data), output_dir=tmp_path / "local", **kwargs)
    on_ray = capeval.score_dataset(str(data), output_dir=tmp_path / "ray", engine="ray", ray_actors=2, **kwargs)
    assert local["rows"] == 12 and 0 <= local["clip_s"]
    assert_same_output(tmp_path / "local", tmp_path / "ray", local, on_ray, float32=("clip_s", "ref_clip_s"))


def test_settings_that_cannot_run_are_refused_before_any_work(ray_cluster, tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(5))
    out = tmp_path / "out"
    cases = [(dict(engine="spark"), "engine must be one of ('local', 'ray'), got 'spark'."),
             (dict(ray_actors=2), "ray_actors only apply with engine='ray'."),
             (dict(engine="ray", processes=2), "processes= is the local engine's; with engine='ray' the actors split "
                                               "the chunks (ray_actors=N)."),
             (dict(engine="ray", ray_actors=0), "ray_actors must be a positive integer, got 0."),
             (dict(engine="ray", ray_gpus_per_actor=-1), "ray_gpus_per_actor must be a number >= 0, got -1."),
             (dict(engine="ray", ray_address="auto"), "Ray is already started in this process; call without "
                                                      "ray_address='auto' (or ray.shutdown() first).")]
    for kwargs, message in cases:
        with pytest.raises(ValueError) as caught:
            capeval.score_dataset(str(data), output_dir=out, language_check=False, progress=False, **kwargs)
        assert str(caught.value) == message
    with pytest.raises(ValueError, match=r"the Ray cluster has 0 GPU\(s\); an actor asks for 1\."):
        capeval.score_dataset(str(data), output_dir=out, language_check=False, progress=False, engine="ray",
                              ray_gpus_per_actor=1)


def test_the_command_line_runs_the_ray_engine(ray_cluster, tmp_path):
    from capeval.cli import main

    data = write_jsonl(tmp_path / "rows.jsonl", make_rows(30, seed=9))
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert main(["score-dataset", str(data), "--out", str(tmp_path / "cli"), "--engine", "ray", "--ray-actors",
                     "2", "--chunk-size", "8", "--no-language-check", "--metrics", "bleu,cider_d"]) == 0
    assert "30 row(s) scored in 4 chunk(s)" in printed.getvalue()
    local = capeval.score_dataset(str(data), output_dir=tmp_path / "local", metrics=["bleu", "cider_d"],
                                  chunk_size=8, language_check=False, progress=False)
    assert_same_output(tmp_path / "local", tmp_path / "cli", local, json.loads((tmp_path / "cli" / "result.json")
                                                                                .read_text()))
