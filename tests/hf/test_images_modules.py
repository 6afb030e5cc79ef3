"""``images=`` through the Hugging Face glue: an evaluate module made from the script template (a fake
image-reading metric), ``evaluate.combine`` with a text module, and ``compute_metrics`` for the Trainer."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from support import ROOT, image_metric
from support.image_metric import image_score

from capeval.hf import compute_metrics
from capeval.hub.metric_folder import build_metric_folder

PREDS = ["a dog runs on the grass", "a cat sits on a mat", "two birds fly"]
REFS = [["a brown dog running on grass"], ["a cat on a mat"], ["birds above the ocean", "two birds"]]


@pytest.fixture
def fake(monkeypatch, tmp_path) -> str:
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return image_metric.register(monkeypatch)


@pytest.fixture
def paths(tmp_path) -> list[str]:
    out = []
    for i in range(len(PREDS)):
        path = tmp_path / f"img{i}.png"
        path.write_bytes(b"picture %d" % i)
        out.append(str(path))
    return out


def _script_from_template(name: str) -> str:
    """``docs/templates/metric_script.py.template`` filled in for metric ``name`` (no extra option)."""
    text = (ROOT / "docs" / "templates" / "metric_script.py.template").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if "<option>" not in line]
    text = "\n".join(lines) + "\n"
    return text.replace("<ClassName>", "FakeImg").replace("<name>", name).replace("<paper URL>", "https://example.org")


@pytest.fixture
def module_folder(fake, tmp_path):
    """A Hub folder built (capeval hub build-metric) from a metrics/ folder whose script is the template's."""
    evaluate = pytest.importorskip("evaluate")
    source = tmp_path / "metrics"
    (source / fake).mkdir(parents=True)
    (source / fake / f"{fake}.py").write_text(_script_from_template(fake), encoding="utf-8")
    (source / fake / "README.md").write_text("---\ntitle: fake\ntags:\n- evaluate\n---\n\n# Metric Card for fake\n",
                                            encoding="utf-8")
    out = tmp_path / "built" / fake
    build_metric_folder(fake, out, kind="metric", source=source)
    return evaluate, out


def test_template_module_passes_images_through(module_folder, fake, paths):
    evaluate, folder = module_folder
    module = evaluate.load(str(folder))
    assert "images (`list`, optional)" in module.inputs_description
    result = module.compute(predictions=PREDS, references=REFS, images=paths)
    assert result["per_caption"][fake] == [image_score(p) for p in paths]
    with pytest.raises(ValueError, match="fake_img needs one image per prediction"):
        module.compute(predictions=PREDS, references=REFS)


def test_combine_sends_images_to_every_module(module_folder, fake, paths):
    evaluate, folder = module_folder
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(folder)])
    result = combined.compute(predictions=PREDS, references=REFS, metrics=f"bleu_1,{fake}", images=paths)
    assert result[fake] == pytest.approx(sum(image_score(p) for p in paths) / len(paths))
    text_only = evaluate.load(str(ROOT / "metrics" / "coco_caption")).compute(predictions=PREDS, references=REFS,
                                                                             metrics="bleu_1")
    assert result["bleu_1"] == text_only["bleu_1"]  # the text module passed the images over


class _Decoder:
    """A stand-in tokenizer: token id k decodes to word k of a fixed vocabulary (no transformers needed)."""

    VOCAB = ["a", "dog", "cat", "runs", "sits", "two", "birds", "fly"]

    def batch_decode(self, rows, skip_special_tokens=True):
        return [" ".join(self.VOCAB[t] for t in row) for row in rows]


def _eval_pred(rows):
    np = pytest.importorskip("numpy")
    width = max(map(len, rows))
    ids = np.array([row + [-100] * (width - len(row)) for row in rows])
    return SimpleNamespace(predictions=ids, label_ids=ids)


def test_trainer_compute_metrics_takes_images_per_row(fake, paths):
    rows = [[0, 1, 3], [0, 1], [0, 2, 4], [5, 6, 7]]  # rows 0 and 1 are the same image id
    images = [paths[0], paths[0], paths[1], paths[2]]
    metrics = compute_metrics(_Decoder(), metrics=f"bleu_1,{fake}", ids=["x", "x", "y", "z"], images=images)
    out = metrics(_eval_pred(rows))
    assert metrics.result["per_caption"][fake] == [image_score(p) for p in paths]  # one row per id: its first
    assert set(out) == {"bleu_1", fake}
    with pytest.raises(ValueError, match="images has 2 entries but ids has 4"):
        compute_metrics(_Decoder(), metrics=fake, ids=["x", "x", "y", "z"], images=paths[:2])
    no_ids = compute_metrics(_Decoder(), metrics=fake, images=paths)
    with pytest.raises(ValueError, match="images= has 3 entries but the Trainer passed 4"):
        no_ids(_eval_pred(rows))
