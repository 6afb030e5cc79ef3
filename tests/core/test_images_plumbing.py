"""``images=``: validated once, carried by the batch (and its subsets), read only by metrics with ``needs_images``.

The image-reading metric is a fake (``tests/support/image_metric.py``): its score of an item is a hash of the
item's image, so each test sees which image reached which prediction.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import capeval
from capeval.api import SCORE_KEYWORDS, option_names, score_shared
from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric
from capeval.signature import parse_signature
from capeval.validation import check_images
from support import image_metric
from support.image_metric import FakeImageMetric, image_score

# a handful of captions on purpose: CIDEr-D's SmallCorpusWarning is expected, not what these tests check
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

PREDS = ["a dog runs on the grass", "a cat sits on a mat", "two birds fly over the sea", "a man rides a horse",
         "a boat on a lake"]
REFS = [["a brown dog running on grass"], ["a cat on a mat", "a cat"], ["birds above the ocean"],
        ["a person riding a horse"], ["a small boat on a calm lake"]]
TEXT = "bleu,rouge_l,cider_d"


@pytest.fixture
def fake(monkeypatch) -> str:
    return image_metric.register(monkeypatch)


@pytest.fixture
def paths(tmp_path) -> list[str]:
    """One small 'image' file per prediction (distinct bytes; the fake metric hashes, never decodes)."""
    out = []
    for i in range(len(PREDS)):
        path = tmp_path / f"img{i}.jpg"
        path.write_bytes(f"fake image {i}".encode() * (i + 1))
        out.append(str(path))
    return out


# -- the contract -----------------------------------------------------------------------------------------


def test_contract_names():
    assert CaptionMetric.needs_images is False and "needs_images" in CaptionMetric.__doc__
    assert FakeImageMetric.needs_images is True
    assert SCORE_KEYWORDS[-1] == "images" and "images" in option_names()
    assert "images" in capeval.score.__doc__


def test_fake_metric_gets_each_prediction_its_image(fake, paths):
    result = capeval.score(PREDS, REFS, metrics=fake, images=paths)
    assert result["per_caption"][fake] == [image_score(p) for p in paths]
    assert result[fake] == pytest.approx(sum(image_score(p) for p in paths) / len(paths))
    assert parse_signature(result["signature"])[fake] == "img=sha256"


def test_every_image_kind_is_accepted(fake, paths):
    np = pytest.importorskip("numpy")
    Image = pytest.importorskip("PIL.Image")
    array = np.zeros((4, 5, 3), np.uint8)
    images = [Path(paths[0]), {"path": paths[1], "bytes": None}, {"bytes": Path(paths[2]).read_bytes()},
              Image.fromarray(array), array]
    got = capeval.score(PREDS, REFS, metrics=fake, images=images)["per_caption"][fake]
    assert got[:3] == [image_score(p) for p in paths[:3]]
    assert got[3] == got[4]  # the same pixels, as a PIL image and as an array


def test_images_ignored_by_text_metrics(paths):
    plain = capeval.score(PREDS, REFS, metrics=TEXT)
    assert capeval.score(PREDS, REFS, metrics=TEXT, images=paths) == plain
    assert capeval.score(PREDS, REFS, metrics=TEXT, images=[None] * len(PREDS)) == plain  # None entries too
    assert parse_signature(plain["signature"])["nrefs"] == "var"


def test_text_and_image_metrics_together(fake, paths):
    both = capeval.score(PREDS, REFS, metrics=f"{TEXT},{fake}", images=paths)
    plain = capeval.score(PREDS, REFS, metrics=TEXT)
    assert {k: both["per_caption"][k] for k in plain["per_caption"]} == plain["per_caption"]
    fields = parse_signature(both["signature"])
    assert {k: fields[k] for k in ("nrefs", "clean", "tok")} == {k: parse_signature(plain["signature"])[k]
                                                                  for k in ("nrefs", "clean", "tok")}


# -- errors name the metric or the item -----------------------------------------------------------------


def test_missing_images_name_the_metric(fake):
    with pytest.raises(ValueError, match=r"fake_img needs one image per prediction: pass images= \(one per "
                                         r"prediction"):
        capeval.score(PREDS, REFS, metrics=f"bleu_4,{fake}")


def test_missing_images_suggest_the_image_free_metric_when_registered():
    with pytest.raises(ValueError, match="or use critic_ref, which needs no image"):
        check_images(None, 3, ["critic", "critic_img"], "critic_ref")
    with pytest.raises(ValueError, match=r"critic, critic_img need one image"):
        check_images(None, 3, ["critic", "critic_img"], "critic_ref")


def test_length_mismatch_names_both_lengths(fake, paths):
    with pytest.raises(ValueError, match="5 predictions but 4 images"):
        capeval.score(PREDS, REFS, metrics=fake, images=paths[:4])
    with pytest.raises(ValueError, match="5 predictions but 6 images"):
        capeval.score(PREDS, REFS, metrics=TEXT, images=paths + paths[:1])  # checked for text metrics too


def test_none_entry_names_the_item(fake, paths):
    images = list(paths)
    images[3] = None
    with pytest.raises(ValueError, match=r"images\[3\] is None; fake_img needs an image for every prediction"):
        capeval.score(PREDS, REFS, metrics=fake, images=images)
    images[3] = float("nan")
    with pytest.raises(ValueError, match=r"images\[3\] is nan"):
        capeval.score(PREDS, REFS, metrics=fake, images=images)


@pytest.mark.parametrize("bad, message", [
    ("", r"images\[2\] is an empty path"),
    ("   ", r"images\[2\] is an empty path"),
    (b"", r"images\[2\] is empty bytes"),
    ({"path": None}, r"images\[2\] is a dict without 'bytes' or 'path'"),
    ({"path": ""}, r"images\[2\]\['path'\] is an empty path"),
    (3, r"images\[2\] is a int \(3\), not an image"),
])
def test_bad_entries_name_the_item(fake, paths, bad, message):
    images = list(paths)
    images[2] = bad
    with pytest.raises(ValueError, match=message):
        capeval.score(PREDS, REFS, metrics=fake, images=images)


def test_a_single_image_is_not_a_list(fake, paths):
    with pytest.raises(TypeError, match="images must be a list"):
        capeval.score(PREDS[:1], REFS[:1], metrics=fake, images=paths[0])
    with pytest.raises(TypeError, match="images must be a sequence"):
        capeval.score(PREDS[:1], REFS[:1], metrics=fake, images=5)


def test_missing_file_is_named_when_the_metric_reads_it(fake, paths):
    images = list(paths)
    images[1] = paths[1] + ".gone"
    with pytest.raises(FileNotFoundError, match=r"images\[1\] .*no such image file"):
        capeval.score(PREDS, REFS, metrics=fake, images=images)


def test_validation_imports_neither_torch_nor_pil():
    code = ("import sys, capeval\n"
            "r = capeval.score(['a dog'], [['a dog runs']], metrics='bleu', images=['x.jpg'])\n"
            "assert 'torch' not in sys.modules and 'PIL' not in sys.modules, sorted(sys.modules)\n"
            "print('ok')\n")
    env = {**os.environ, "PYTHONPATH": str(Path(capeval.__file__).parents[1])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


# -- the batch and several processes ---------------------------------------------------------------------


def test_batch_keeps_images_in_subsets(paths):
    batch = CaptionBatch(PREDS, REFS, images=paths)
    sub = batch.subset([4, 1])
    assert sub.images == [paths[4], paths[1]] and sub.raw_predictions == [PREDS[4], PREDS[1]]
    assert CaptionBatch(PREDS, REFS).subset([0]).images is None
    with pytest.raises(ValueError, match="5 predictions but 2 images"):
        CaptionBatch(PREDS, REFS, images=paths[:2])


class _TwoShares:
    """What capeval.parallel's ProcessShare does with 2 processes, in one: prepare() on each half, gathered."""

    is_main = True

    def __call__(self, metric, batch):
        if type(metric).prepare is CaptionMetric.prepare:
            return None
        half = len(batch) // 2
        return metric.prepare(batch.subset(range(half))) + metric.prepare(batch.subset(range(half, len(batch))))


def test_shared_preparation_equals_one_process(fake, paths):
    one = capeval.score(PREDS, REFS, metrics=f"bleu,{fake}", images=paths)
    assert score_shared(PREDS, REFS, f"bleu,{fake}", share=_TwoShares(), images=paths) == one


_TWO_PROCESS_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from support import image_metric
import capeval.parallel
name = image_metric.install()
args = json.loads(open(sys.argv[2]).read())
result = capeval.parallel.score(args["preds"], args["refs"], metrics="bleu_4," + name, images=args["images"])
if result is not None:
    open(sys.argv[3], "w").write(json.dumps(result))
"""


def test_two_processes_identical_to_one(fake, paths, tmp_path):
    """2 CPU processes (accelerate launch): each prepares its half of the images; the result is one process's."""
    import json

    pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from support import ROOT, run_python

    script, inputs, out = tmp_path / "two.py", tmp_path / "in.json", tmp_path / "out.json"
    script.write_text(_TWO_PROCESS_SCRIPT)
    inputs.write_text(json.dumps({"preds": PREDS, "refs": REFS, "images": paths}))
    launch = ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no", str(script), str(ROOT / "tests"), str(inputs),
              str(out)]
    proc = run_python(launch, env={"OMP_NUM_THREADS": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    one = json.loads(json.dumps(capeval.score(PREDS, REFS, metrics=f"bleu_4,{fake}", images=paths)))
    assert json.loads(out.read_text()) == one
