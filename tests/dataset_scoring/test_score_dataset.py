"""capeval.score_dataset / ``capeval score-dataset``: the same numbers as capeval.score on the whole data,
from every kind of input, resumable after kill -9, identical over processes, other settings refused, bad rows named."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import capeval
from support.caption_rows import make_rows, shards, write_jsonl

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

TEXT_METRICS = ["bleu", "rouge_l", "cider_d", "meteor"]


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return make_rows(300)


@pytest.fixture(scope="module")
def whole(rows):
    return capeval.score([r["prediction"] for r in rows], [r["references"] for r in rows], metrics=TEXT_METRICS,
                         language_check=False)


def _assert_equal_to_whole(result: dict, table: dict, whole: dict, rows: list[dict], id_column: str = "id") -> None:
    keys = [k for k in whole if isinstance(whole[k], float)]
    assert result["rows"] == len(rows) and table[id_column] == [r["id"] for r in rows]
    for key in keys:
        assert result[key] == pytest.approx(whole[key], abs=1e-9), key
        assert max(abs(a - b) for a, b in zip(table[key], whole["per_caption"][key])) <= 1e-9, key
    assert result["signature"] == whole["signature"]


def test_the_numbers_are_capeval_score_on_the_whole_data(tmp_path, rows, whole):
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    result = capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=tmp_path / "out", chunk_size=64,
                                   language_check=False)
    _assert_equal_to_whole(result, shards(tmp_path / "out"), whole, rows)
    assert result["chunks"] == 5 and result["skipped"] == {"count": 0, "rows": []}
    assert json.loads((tmp_path / "out" / "result.json").read_text()) == result
    # nrefs: chunks of uniform counts would each say a number; the whole data says var
    assert result["signature"].startswith("nrefs:var|")


def test_every_kind_of_input_gives_the_same_output(tmp_path, rows, whole):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "parquet"
    folder.mkdir()
    for name, part in (("a.parquet", rows[:50]), ("b.parquet", rows[50:51]), ("c.parquet", rows[51:])):
        pq.write_table(pa.Table.from_pylist(part), folder / name, row_group_size=17)
    ds = datasets.Dataset.from_list(rows)
    inputs = {"parquet": str(folder), "dataset": ds, "iterable": ds.to_iterable_dataset(num_shards=3),
              "dict": datasets.DatasetDict({"test": ds})}
    for name, data in inputs.items():
        result = capeval.score_dataset(data, metrics=TEXT_METRICS, output_dir=tmp_path / f"out-{name}", chunk_size=40,
                                       split="test" if name == "dict" else None, language_check=False)
        _assert_equal_to_whole(result, shards(tmp_path / f"out-{name}"), whole, rows)


def test_a_hub_dataset_id_is_streamed_through_datasets(tmp_path, rows, whole, monkeypatch):
    """A Hub id with a split: datasets.load_dataset(id, split=..., streaming=True), read as an IterableDataset (the
    Hub itself stands in by a local stream: nothing is downloaded); without a split, a clear error before any work."""
    datasets = pytest.importorskip("datasets")
    calls = []

    def load_dataset(path, *args, **kwargs):
        calls.append((path, args, kwargs))
        return datasets.Dataset.from_list(rows).to_iterable_dataset(num_shards=2)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    out = tmp_path / "out"
    result = capeval.score_dataset("someone/captions", metrics=TEXT_METRICS, output_dir=out, split="test",
                                   chunk_size=40, language_check=False)
    assert calls == [("someone/captions", (), {"split": "test", "streaming": True})]
    _assert_equal_to_whole(result, shards(out), whole, rows)
    manifest = json.loads((out / "capeval-score-dataset.json").read_text())
    assert manifest["settings"]["input"] == {"kind": "hub", "id": "someone/captions", "split": "test"}
    # the same id and split resume the folder; another split is another input
    assert capeval.score_dataset("someone/captions", metrics=TEXT_METRICS, output_dir=out, split="test",
                                 chunk_size=40, language_check=False) == result
    with pytest.raises(ValueError, match="other settings"):
        capeval.score_dataset("someone/captions", metrics=TEXT_METRICS, output_dir=out, split="train",
                              chunk_size=40, language_check=False)
    with pytest.raises(ValueError, match="needs a split"):
        capeval.score_dataset("someone/captions", metrics=TEXT_METRICS, output_dir=tmp_path / "none",
                              language_check=False)
    assert not (tmp_path / "none").exists()
    # the command line: DATA a Hub id, --split
    from capeval.cli import main

    assert main(["score-dataset", "someone/captions", "--split", "test", "--out", str(tmp_path / "cli"), "--metrics",
                 ",".join(TEXT_METRICS), "--chunk-size", "40", "--no-language-check"]) == 0
    assert json.loads((tmp_path / "cli" / "result.json").read_text()) == result


def test_processes_give_the_identical_output(tmp_path, rows):
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    one = capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=tmp_path / "one", chunk_size=50,
                                language_check=False)
    two = capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=tmp_path / "two", chunk_size=50,
                                processes=2, language_check=False)
    assert one == two
    assert (tmp_path / "one" / "result.json").read_bytes() == (tmp_path / "two" / "result.json").read_bytes()
    assert shards(tmp_path / "one") == shards(tmp_path / "two")
    # the first pass counted in two shares and merged: the same document-frequency table, byte for byte
    assert (tmp_path / "one" / "cider-df.bin").read_bytes() == (tmp_path / "two" / "cider-df.bin").read_bytes()
    assert not list((tmp_path / "two").glob("cider-df.part-*")) and not list((tmp_path / "two").glob(".tmp-*"))


def test_a_first_pass_interrupted_between_its_shares_resumes_with_another_process_count(tmp_path, rows, monkeypatch):
    """Parts of the first pass counted by 2 processes (one then lost), resumed with 3: the parts of 3 are counted and
    merged, the stale part removed, the output that of one process."""
    from capeval.dataset_scoring import run as run_module

    data = write_jsonl(tmp_path / "data.jsonl", rows)
    one = capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=tmp_path / "one", chunk_size=30,
                                language_check=False)

    def interrupted(run, world):
        raise KeyboardInterrupt

    def counted_by_two_then_interrupted(out):
        with monkeypatch.context() as patch:
            patch.setattr(run_module, "merge_shares_of", interrupted)
            with pytest.raises(KeyboardInterrupt):
                capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=out, chunk_size=30, processes=2,
                                      language_check=False)

    out = tmp_path / "out"
    counted_by_two_then_interrupted(out)
    parts = sorted(p.name for p in out.glob("cider-df.part-*"))
    assert parts == ["cider-df.part-00000-of-00002.bin", "cider-df.part-00001-of-00002.bin"]
    (out / parts[1]).unlink()
    three = capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=out, chunk_size=30, processes=3,
                                  language_check=False)
    assert three == one
    assert (out / "cider-df.bin").read_bytes() == (tmp_path / "one" / "cider-df.bin").read_bytes()
    assert not list(out.glob("cider-df.part-*"))

    # the same interruption resumed in one process: it counts alone and removes the stale part
    out = tmp_path / "out-1"
    counted_by_two_then_interrupted(out)
    assert capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=out, chunk_size=30,
                                 language_check=False) == one
    assert not list(out.glob("cider-df.part-*"))


def test_a_bad_row_met_in_the_first_pass_of_several_processes_stops_them_all(tmp_path, rows):
    """Process 1 meets a bad row while counting its share (chunk 1): the run fails in its words at once, and process
    0, counting its share or waiting for the merged table, is stopped (no shard scored, nothing merged)."""
    import time

    bad = [dict(r) for r in rows[:120]]
    bad[45]["references"] = []
    data = write_jsonl(tmp_path / "bad.jsonl", bad)
    started = time.monotonic()
    with pytest.raises(RuntimeError) as caught:
        capeval.score_dataset(str(data), metrics=["bleu", "cider_d"], output_dir=tmp_path / "out", chunk_size=40,
                              processes=2, language_check=False)
    assert time.monotonic() - started < 120
    assert str(caught.value).startswith("score_dataset: process 1 of 2 failed: ")
    assert "row 45 (id 'img00045'): references is an empty list" in str(caught.value)
    assert not list((tmp_path / "out").glob("shards/part-*")) and not (tmp_path / "out" / "cider-df.bin").exists()


_RUN = """
import sys, warnings
warnings.simplefilter("ignore")
import capeval
capeval.score_dataset(sys.argv[1], metrics=["bleu", "rouge_l", "cider_d", "meteor"], output_dir=sys.argv[2],
                      chunk_size=int(sys.argv[3]), language_check=False)
"""


def test_killed_at_random_moments_the_same_call_finishes_with_the_identical_output(tmp_path):
    rows = make_rows(1200, seed=3)
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    command = [sys.executable, "-c", _RUN, str(data)]
    reference = tmp_path / "uninterrupted"
    subprocess.run([*command, str(reference), "20"], check=True, timeout=600)
    out = tmp_path / "killed"
    rng = random.Random(7)
    mid_run = 0

    # the moments a run is killed at, each seen in the output folder (no clock): start-up (at once),
    # the document-frequency pass, a file being written (a new .tmp-*)
    def new_paths(before, pattern):
        return out.is_dir() and any(path not in before for path in out.rglob(pattern))

    moments = {
        "start-up": lambda before: True,
        "first pass": lambda before: new_paths(before, "*cider-df*"),
        "writing": lambda before: new_paths(before, ".tmp-*"),
    }
    for attempt in range(4):
        # alternately a random moment (start-up, the first pass, a file being written) and a random shard count;
        # the shard count also bounds the first kind, so no attempt runs to the end
        moment = moments[rng.choice(sorted(moments))]
        before = set(out.rglob("*")) if out.is_dir() else set()
        proc = subprocess.Popen([*command, str(out), "20"])
        target = rng.randint(1 + 12 * attempt, 10 + 12 * attempt)
        while proc.poll() is None:
            done = len(list((out / "shards").glob("part-*.parquet"))) if (out / "shards").is_dir() else 0
            if (attempt % 2 == 0 and moment(before)) or done >= target:
                os.kill(proc.pid, signal.SIGKILL)
                mid_run += 0 < done < 60
                break
            time.sleep(0.005)
        proc.wait(timeout=60)
        if (out / "result.json").exists():
            break
    assert mid_run >= 1
    subprocess.run([*command, str(out), "20"], check=True, timeout=600)
    assert (out / "result.json").read_bytes() == (reference / "result.json").read_bytes()
    table = shards(out)
    assert table == shards(reference)
    assert len(table["id"]) == len(set(table["id"])) == len(rows)
    assert not list(out.rglob(".tmp-*"))


def test_other_settings_or_a_foreign_folder_are_refused_and_left_untouched(tmp_path, rows):
    data = write_jsonl(tmp_path / "data.jsonl", rows[:100])
    out = tmp_path / "out"
    capeval.score_dataset(str(data), metrics=["bleu", "rouge_l"], output_dir=out, chunk_size=40, language_check=False)
    before = snapshot(out)
    for change in ({"metrics": ["bleu"]}, {"chunk_size": 30}, {"cider_df": "coco-val2014", "metrics": ["cider_d"]},
                   {"on_error": "skip"}):
        kwargs = {"metrics": ["bleu", "rouge_l"], "chunk_size": 40, **change}
        with pytest.raises(ValueError, match="other settings"):
            capeval.score_dataset(str(data), output_dir=out, language_check=False, **kwargs)
        assert snapshot(out) == before
    write_jsonl(data, rows[:101])  # other input
    with pytest.raises(ValueError, match="input"):
        capeval.score_dataset(str(data), metrics=["bleu", "rouge_l"], output_dir=out, chunk_size=40)
    assert snapshot(out) == before
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a score_dataset output folder"):
        capeval.score_dataset(str(data), metrics=["bleu"], output_dir=foreign)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


def test_bad_rows_are_named_or_skipped_and_listed(tmp_path, rows):
    bad = [dict(r) for r in rows[:80]]
    bad[5]["prediction"] = "   "
    bad[17]["references"] = []
    bad[33]["prediction"] = 42
    bad[61]["references"] = ["fine", None]
    data = write_jsonl(tmp_path / "bad.jsonl", bad)
    with pytest.raises(ValueError, match=r"row 5 \(id 'img00005'\): prediction is empty"):
        capeval.score_dataset(str(data), metrics=["bleu", "cider_d"], output_dir=tmp_path / "raise", chunk_size=32)
    result = capeval.score_dataset(str(data), metrics=["bleu", "cider_d"], output_dir=tmp_path / "skip", chunk_size=32,
                                   on_error="skip", language_check=False)
    assert result["skipped"]["count"] == 4
    assert [(s["row"], s["id"]) for s in result["skipped"]["rows"]] == [(5, "img00005"), (17, "img00017"),
                                                                      (33, "img00033"), (61, "img00061")]
    assert "references[1] is NoneType" in result["skipped"]["rows"][3]["why"]
    kept = [r for i, r in enumerate(bad) if i not in (5, 17, 33, 61)]
    whole = capeval.score([r["prediction"] for r in kept], [r["references"] for r in kept], metrics=["bleu", "cider_d"],
                          language_check=False)
    _assert_equal_to_whole(result, shards(tmp_path / "skip"), whole, kept)


def test_columns_and_options_are_checked_before_any_work(tmp_path, rows):
    data = write_jsonl(tmp_path / "data.jsonl", rows[:20])
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"no column 'caption' \(prediction column\)"):
        capeval.score_dataset(str(data), output_dir=out, prediction_column="caption")
    with pytest.raises(ValueError, match="id_column=None"):
        capeval.score_dataset(str(data), output_dir=out, id_column="image_id")
    with pytest.raises(ValueError, match="Unknown option"):
        capeval.score_dataset(str(data), output_dir=out, cider_dff="x")
    with pytest.raises(ValueError, match="spice_u cannot be scored chunk by chunk"):
        capeval.score_dataset(str(data), metrics="spice_u", output_dir=out)
    with pytest.raises(ValueError, match="image_column"):
        capeval.score_dataset(str(data), metrics="critic", output_dir=out)
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        capeval.score_dataset(str(data), output_dir=out, chunk_size=0)
    with pytest.raises(ValueError, match="multiple of"):
        capeval.score_dataset(str(data), metrics="polos", output_dir=out, chunk_size=50)
    assert not out.exists()
    result = capeval.score_dataset(str(data), metrics="bleu_4", output_dir=out, id_column=None, language_check=False)
    assert shards(out)["row"] == list(range(20)) and set(result) >= {"bleu_4", "signature", "rows"}


def test_learned_and_image_metrics_read_the_image_column(tmp_path):
    pytest.importorskip("torch")
    from capeval.io import example_images

    images = example_images()
    # "zorblaxian" and "quibbletron" are in no vocabulary: coverage below 1 in one chunk only
    preds = ["a tabby cat looking at the camera", "an astronaut in an orange suit", "a zorblaxian cup on a saucer"]
    refs = [["a cat with stripes"], ["a smiling woman in a space suit"], ["a quibbletron cup of coffee"]]
    folder = tmp_path / "data"
    folder.mkdir()
    for path in images:
        (folder / path.name).write_bytes(Path(path).read_bytes())
    data = write_jsonl(folder / "rows.jsonl", [{"id": i, "prediction": p, "references": r, "image": images[i].name}
                                               for i, (p, r) in enumerate(zip(preds, refs))])
    result = capeval.score_dataset(str(data), metrics=["critic", "critic_ref"], output_dir=tmp_path / "out",
                                   image_column="image", chunk_size=2, language_check=False)
    whole = capeval.score(preds, refs, metrics=["critic", "critic_ref"], images=images, language_check=False)
    table = shards(tmp_path / "out")
    for key in ("critic", "critic_ref"):
        # float32 models: chunks of 2 and 1 and a batch of 3 may meet different BLAS kernels (CI's CPU: 1.9e-8 apart)
        assert result[key] == pytest.approx(whole[key], abs=1e-6)
        assert table[key] == pytest.approx(whole["per_caption"][key], abs=1e-6)
        # vocabulary coverage: token counts added up over the chunks give capeval.score's share exactly
        assert result["coverage"][key] == pytest.approx(whole["coverage"][key], abs=1e-12) and result["coverage"][key] < 1
        assert table[f"coverage_{key}"] == whole["coverage_per_caption"][key]
        counts = result["coverage_tokens"][key]
        assert counts["total"] > counts["known"] > 0
    assert result["signature"] == whole["signature"]
    on_disk = json.loads((tmp_path / "out" / "result.json").read_text(encoding="utf-8"))
    assert on_disk["coverage"] == result["coverage"]
    from capeval.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert main(["score-dataset", str(data), "--out", str(tmp_path / "cli"), "--metrics", "critic_ref",
                     "--chunk-size", "2", "--no-language-check"]) == 0
    assert f"vocabulary coverage: critic_ref {whole['coverage']['critic_ref']:.1%}" in printed.getvalue()
    # a datasets.Image column (decoded lazily from its bytes / path by the metric that reads it)
    import datasets

    ds = datasets.Dataset.from_dict({"id": [0, 1, 2], "prediction": preds, "references": refs,
                                     "image": [str(p) for p in images]}).cast_column("image", datasets.Image())
    from_ds = capeval.score_dataset(ds, metrics=["critic"], output_dir=tmp_path / "out-ds", image_column="image",
                                    language_check=False)
    assert from_ds["critic"] == pytest.approx(whole["critic"], abs=1e-9)


def test_the_command_line_scores_resumes_and_refuses(tmp_path, rows, capsys):
    from capeval.cli import main

    data = write_jsonl(tmp_path / "data.jsonl", rows[:120])
    args = ["score-dataset", str(data), "--out", str(tmp_path / "out"), "--metrics", "bleu,cider_d",
            "--chunk-size", "50", "--no-language-check", "--json", str(tmp_path / "r.json")]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "120 row(s) scored in 3 chunk(s)" in printed and "signature: nrefs:var" in printed
    first = (tmp_path / "r.json").read_text()
    (tmp_path / "out" / "shards" / "part-000001.parquet").unlink()  # as if killed before chunk 1 was written
    assert main(args) == 0
    assert (tmp_path / "r.json").read_text() == first
    assert main([*args[:5], "bleu"]) == 1
    assert "other settings" in capsys.readouterr().err


def test_accelerate_launch_splits_the_chunks_with_the_identical_output(tmp_path, rows):
    pytest.importorskip("accelerate")
    pytest.importorskip("torch")
    from capeval.parallel import launch_command

    data = write_jsonl(tmp_path / "data.jsonl", rows[:150])
    one = capeval.score_dataset(str(data), metrics=["bleu", "cider_d"], output_dir=tmp_path / "one", chunk_size=40,
                                language_check=False)
    done = subprocess.run(launch_command(2, ["score-dataset", str(data), "--out", str(tmp_path / "launched"),
                                             "--metrics", "bleu,cider_d", "--chunk-size", "40",
                                             "--no-language-check"]), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "launched" / "result.json").read_text()) == one
    # each process counted its share of the first pass; the merged table is the one-process table
    assert (tmp_path / "launched" / "cider-df.bin").read_bytes() == (tmp_path / "one" / "cider-df.bin").read_bytes()
    assert not list((tmp_path / "launched").glob("cider-df.part-*"))
    assert shards(tmp_path / "launched") == shards(tmp_path / "one")


def test_the_corpus_merge_holds_one_chunk_at_a_time():
    """result.json's sums are math.fsum of every chunk's sum, kept as exact partials (memory independent of the
    chunk count); BLEU's and METEOR's states are merged from generators, read once."""
    import math

    from capeval.coco.bleu import Bleu
    from capeval.coco.meteor import Meteor
    from capeval.dataset_scoring.merge import ExactSum

    rng = random.Random(11)
    for _ in range(100):
        values = [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 12) for _ in range(rng.randint(0, 400))]
        total = ExactSum()
        for v in values:
            total.add(v)
        assert total.value() == math.fsum(values)
        assert len(total._partials) <= 60  # bounded by the exponent range, not by the number of values
    total.add(float("inf"))
    assert total.value() == float("inf")

    preds = [f"a dog number {i} runs on the grass" for i in range(30)]
    refs = [["a dog runs on the green grass", "the dog is running"]] * 30
    whole = capeval.score(preds, refs, metrics=["bleu", "meteor"], language_check=False)
    from capeval.api import score_with_states

    states = [score_with_states(preds[i:i + 7], refs[i:i + 7], metrics=["bleu", "meteor"], language_check=False)[1]
              for i in range(0, 30, 7)]
    bleu = Bleu.corpus_from_states(s["bleu"]["state"] for s in states)
    meteor = Meteor.corpus_from_states(s["meteor"]["state"] for s in states)
    assert bleu["bleu_4"] == whole["bleu_4"] and meteor["meteor"] == whole["meteor"]


def test_an_accelerate_launch_waits_long_at_its_barriers(monkeypatch):
    """NCCL gives up at a barrier after 10 minutes; a merge or a resumed process's last share can take hours."""
    pytest.importorskip("accelerate")
    pytest.importorskip("torch")
    from datetime import timedelta

    import capeval.parallel as parallel
    from capeval.dataset_scoring.run import DISTRIBUTED_TIMEOUT_S, distributed_state

    seen = {}
    monkeypatch.setattr(parallel, "in_distributed_launch", lambda: True)
    monkeypatch.setattr(parallel, "partial_state", lambda accelerate, **kwargs: seen.update(kwargs) or "state")
    monkeypatch.delenv("CAPEVAL_DISTRIBUTED_TIMEOUT", raising=False)
    assert distributed_state() == "state" and seen["timeout"] == timedelta(seconds=DISTRIBUTED_TIMEOUT_S)
    monkeypatch.setenv("CAPEVAL_DISTRIBUTED_TIMEOUT", "90")
    distributed_state()
    assert seen["timeout"] == timedelta(seconds=90)
    for bad in ("soon", "0", "-5", "nan"):
        monkeypatch.setenv("CAPEVAL_DISTRIBUTED_TIMEOUT", bad)
        with pytest.raises(ValueError, match="CAPEVAL_DISTRIBUTED_TIMEOUT"):
            distributed_state()


def test_a_first_pass_that_spills_to_disk_gives_the_same_numbers(tmp_path, rows, whole, monkeypatch):
    """The counter's memory bound forced down to 300 entries: many sorted runs, merged in rounds of 2."""
    from capeval.coco import disk_df

    monkeypatch.setattr(disk_df, "MEMORY_ENTRIES", 300)
    monkeypatch.setattr(disk_df, "MERGE_EVERY", 100)
    monkeypatch.setattr(disk_df, "FAN_IN", 2)
    monkeypatch.setattr(disk_df, "MERGE_BLOCK", 64)
    monkeypatch.setattr(disk_df, "BLOCK", 8)
    spilled = []
    original = disk_df.DiskDocumentFrequencyCounter._spill

    def spill(self):
        spilled.append(len(self._keys))
        original(self)

    monkeypatch.setattr(disk_df.DiskDocumentFrequencyCounter, "_spill", spill)
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    result = capeval.score_dataset(str(data), metrics=TEXT_METRICS, output_dir=tmp_path / "out", chunk_size=25,
                                   language_check=False)
    assert len(spilled) >= 4
    _assert_equal_to_whole(result, shards(tmp_path / "out"), whole, rows)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        ["capeval-score-dataset.json", "cider-df.bin", "plan.json", "result.json", "shards"])


def test_a_process_takes_the_next_chunk_no_other_took(tmp_path):
    """spawn's workers claim chunks through a shared counter: one that reaches a chunk first scores it, one that
    arrives later finds it taken (so none waits at the end for a slower one), and each chunk is scored once."""
    import multiprocessing

    from capeval.dataset_scoring import run as runner
    from capeval.dataset_scoring.chunks import new_run
    from capeval.dataset_scoring.merge import finalize

    data = write_jsonl(tmp_path / "data.jsonl", make_rows(45))
    run = new_run(data=str(data), split=None, folder=tmp_path / "out", selected={"bleu": ["bleu_4"]}, options={},
                  columns={"prediction": "prediction", "references": "references", "id": "id", "image": None},
                  chunk_size=10, on_error="raise", progress=False, language_check=False,
                  score_kwargs={"empty": "error", "cleanup": "none", "tokenizer": "ptb", "max_caption_chars": None})
    runner._open_output(run, main=True)
    claims = multiprocessing.get_context("spawn").Value("q", 0)
    runner._score_chunks(run, 1, 2, claims)  # process 1 of 2 reaches every chunk first: it takes all five
    paths = sorted((tmp_path / "out" / "shards").glob("part-*.parquet"))
    assert len(paths) == 5 and claims.value == 5
    written = {path: path.stat().st_mtime_ns for path in paths}
    runner._score_chunks(run, 0, 2, claims)  # process 0, later: none left
    assert {path: path.stat().st_mtime_ns for path in paths} == written
    whole = capeval.score_dataset(str(data), ["bleu"], tmp_path / "one", chunk_size=10, cleanup="none",
                                  language_check=False, progress=False)
    assert finalize(run)["bleu_4"] == whole["bleu_4"]
