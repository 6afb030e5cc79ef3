"""The learned metrics on the readable scale (capeval.scales): the shipped defaults score on it by
default, the raw probability one option away, the signature says which, rankings unchanged, the benchmarks read raw,
another model stays raw (or is refused when the readable scale is asked for)."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.registry import metric_class
from capeval.scales import shipped_scales

pytest.importorskip("torch")

CANDIDATES = ["a dog runs across the green grass", "a brown dog is running on a lawn", "a cat sleeps on a sofa",
              "dog dog dog grass", "two children play football in a park", "!!!"]
REFERENCES = [["a dog running on the grass", "a brown dog runs outside"]] * 4 + [
    ["kids playing soccer on a field", "two boys kick a ball in the park"], ["a dog on the grass"]]


@pytest.mark.parametrize("metric", ["critic_ref", "lceval"])
def test_the_default_is_readable_and_raw_is_one_option_away(metric):
    option = {"critic_ref": "critic_scale", "lceval": "lceval_scale"}[metric]
    readable = capeval.score(CANDIDATES, REFERENCES, metrics=metric, language_check=False)
    raw = capeval.score(CANDIDATES, REFERENCES, metrics=metric, language_check=False, **{option: "raw"})
    scale = shipped_scales()[metric]
    r, m = np.asarray(raw["per_caption"][metric]), np.asarray(readable["per_caption"][metric])
    assert m == pytest.approx(scale(r), abs=1e-12)
    assert readable[metric] == pytest.approx(m.mean(), abs=1e-12) and raw[metric] == pytest.approx(r.mean())
    assert f"scale=readable@{scale.digest}" in readable["signature"] and "scale=raw" in raw["signature"]
    assert np.array_equal(np.argsort(r, kind="stable"), np.argsort(m, kind="stable"))
    assert m[-1] == 0.0 == r[-1]  # no word: 0 on both scales
    # the spread the map exists for: raw fluent captions crowd near 1, readable ones do not
    fluent = [0, 1, 4]
    assert np.ptp(m[fluent]) > np.ptp(r[fluent])


def test_every_shipped_map_applies_to_its_metric_by_default():
    for metric in shipped_scales():
        instance = metric_class(metric)()
        found = instance._readable()
        assert found is not None and found.metric == metric, (
            f"{metric}: the shipped map does not match the default model's weights (retrained? re-run "
            "benchmarks/fit_scales.py fit)")


def test_a_model_without_a_map_stays_raw_unless_readable_is_asked_for():
    result = capeval.score(CANDIDATES[:2], REFERENCES[:2], metrics="critic_ref", critic_ref_model="critic-coco-ref",
                           language_check=False)
    assert "scale=raw" in result["signature"]
    with pytest.raises(ValueError, match="critic_scale='raw'"):
        capeval.score(CANDIDATES[:2], REFERENCES[:2], metrics="critic_ref", critic_ref_model="critic-coco-ref",
                      critic_scale="readable", language_check=False)
    with pytest.raises(ValueError, match="critic_scale must be one of"):
        capeval.score(CANDIDATES[:2], REFERENCES[:2], metrics="critic_ref", critic_scale="percent")
    assert "scale" not in capeval.score(CANDIDATES[:2], REFERENCES[:2], metrics="lceval_released",
                                        language_check=False)["signature"]


def test_the_benchmarks_read_the_raw_scale_unless_told(tmp_path):
    from capeval.meta_evaluation.scorers import score_items

    items = score_items("critic_ref", CANDIDATES[:3], REFERENCES[:3])["critic_ref"]
    assert "scale=raw" in items.signature
    raw = capeval.score(CANDIDATES[:3], REFERENCES[:3], metrics="critic_ref", critic_scale="raw",
                        language_check=False)
    assert items.values == pytest.approx(raw["per_caption"]["critic_ref"], abs=1e-12)
    told = score_items("critic_ref", CANDIDATES[:3], REFERENCES[:3], options={"critic_scale": "auto"})["critic_ref"]
    assert "scale=readable@" in told.signature


def test_the_command_line_says_which_scale_and_takes_scale_raw(tmp_path, capsys):
    import json

    from capeval.cli import main

    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"image_id": i, "caption": c} for i, c in enumerate(CANDIDATES[:3])]))
    refs = tmp_path / "r.json"
    refs.write_text(json.dumps({str(i): r for i, r in enumerate(REFERENCES[:3])}))
    args = ["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "critic_ref",
            "--no-language-check"]
    assert main(args) == 0
    default = capsys.readouterr().out
    assert "readable scale (" in default and "): critic_ref" in default and "scale=readable@" in default
    assert main([*args, "--scale", "raw", "--json", str(tmp_path / "raw.json")]) == 0
    raw_out = capsys.readouterr().out
    assert "readable scale" not in raw_out and "scale=raw" in raw_out
    raw = json.loads((tmp_path / "raw.json").read_text())
    direct = capeval.score(CANDIDATES[:3], REFERENCES[:3], metrics="critic_ref", critic_scale="raw",
                           language_check=False)
    assert raw["critic_ref"] == pytest.approx(direct["critic_ref"], abs=1e-12)
