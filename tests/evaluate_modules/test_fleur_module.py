"""metrics/fleur through `evaluate`, with the tiny LLaVA-1.5 (fixture ``tiny_llava``, transformers' layout) and the
bundled photos: the numbers, keys, judge failures, judges and signature of `capeval.score` (NaN positions included),
`metrics=` choosing between fleur and ref_fleur, fleur_explain, the errors raised before any judge is loaded, and
the Space's app reading CAPEVAL_FLEUR_MODEL."""
from __future__ import annotations

import math
import runpy
import warnings

import pytest
from support import ROOT, needs

import capeval
from capeval.io import example_images

evaluate = pytest.importorskip("evaluate")

#: Captions of the tiny model's training text (capeval.judges.random_llava.CAPTIONS) and others: with ref_fleur the
#: tiny model answers one item with a number outside [0, 1] (a NaN the module must pass through).
PREDICTIONS = ["a tabby cat looking at the camera", "an astronaut in an orange suit", "a cup of coffee on a saucer"]
REFERENCES = [["a cat with stripes"], ["a smiling woman in a space suit in front of a flag"],
              "a cup of coffee with a spoon on a wooden table"]
KEYS = ["fleur", "ref_fleur"]

pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.fixture(scope="module")
def fleur_module():
    needs("fleur")
    return evaluate.load(str(ROOT / "metrics" / "fleur"))


@pytest.fixture(scope="module")
def judge(tiny_llava) -> str:
    return str(tiny_llava["hf"])


def _same(got: list[float], want: list[float]) -> bool:
    """Equal lists, NaN where the other has NaN."""
    return len(got) == len(want) and all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want))


def _quiet_score(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capeval.score(*args, **kwargs)


# the random-weight test judge's answers are often unusable: its JudgeFailureWarning is asserted in the next test
@pytest.mark.filterwarnings("ignore::capeval.judges.answers.JudgeFailureWarning")
def test_module_equals_capeval_score(fleur_module, judge):
    images = example_images()
    got = fleur_module.compute(predictions=PREDICTIONS, references=REFERENCES, images=images, fleur_model=judge)
    want = _quiet_score(PREDICTIONS, REFERENCES, metrics=KEYS, images=images, fleur_model=judge)
    assert sorted(got) == sorted(want) == sorted([*KEYS, "judge_failures", "judges", "per_caption", "signature"])
    for key in KEYS:
        assert _same(got["per_caption"][key], want["per_caption"][key]), key
        assert _same([got[key]], [want[key]]), key
        scored = [s for s in got["per_caption"][key] if not math.isnan(s)]
        assert scored and all(0.0 <= s <= 1.0 for s in scored), key
        assert got[key] == pytest.approx(sum(scored) / len(scored), abs=1e-12), key
    assert got["signature"] == want["signature"]
    assert got["judge_failures"] == want["judge_failures"]
    assert got["judges"] == want["judges"] == {"fleur": f"FLEUR prompt, judge {judge}",
                                                "ref_fleur": f"RefFLEUR prompt, judge {judge}"}
    fields = got["signature"].split("|")
    assert fields[2].startswith(f"fleur:judge={judge}#") and ",paper=no,prompt=fleur," in fields[2]
    assert fields[3].startswith(f"ref_fleur:judge={judge}#") and ",prompt=ref-fleur," in fields[3]


def test_unscored_items_are_nan_listed_and_warned(fleur_module, judge):
    """The tiny judge gives at least one answer without a usable number here: NaN at the failure's index, the
    failure listed with its answer and reason, one JudgeFailureWarning, the mean over the others."""
    from capeval.judges.answers import JudgeFailureWarning

    with pytest.warns(JudgeFailureWarning, match="gave no score"):
        got = fleur_module.compute(predictions=PREDICTIONS, references=REFERENCES, images=example_images(),
                                   fleur_model=judge)
    failures = [(key, f) for key in KEYS for f in got["judge_failures"][key]]
    assert failures, "the tiny judge's answers all gave a number: pick captions where one does not"
    for key in KEYS:
        per = got["per_caption"][key]
        nan_at = [i for i, s in enumerate(per) if math.isnan(s)]
        listed = got["judge_failures"][key]
        assert nan_at == [f["index"] for f in listed], key
        assert all(set(f) == {"index", "answer", "reason"} and f["reason"] for f in listed), key
        assert isinstance(got[key], float) and not math.isnan(got[key]), key


def test_metrics_chooses_and_explain_adds_the_answers(fleur_module, judge):
    images = example_images()
    kwargs = dict(predictions=PREDICTIONS, references=REFERENCES, images=images, fleur_model=judge)
    only = fleur_module.compute(metrics="fleur", fleur_explain=True, **kwargs)
    assert sorted(only) == ["fleur", "fleur_explanations", "judge_failures", "judges", "per_caption", "signature"]
    assert "ref_fleur" not in only["signature"]
    want = _quiet_score(PREDICTIONS, REFERENCES, metrics="fleur", images=images, fleur_model=judge,
                        fleur_explain=True)
    assert only["fleur_explanations"] == want["fleur_explanations"]
    explanations = only["fleur_explanations"]["fleur"]
    assert len(explanations) == 3
    for score, text in zip(only["per_caption"]["fleur"], explanations):
        assert (text is None) == math.isnan(score)
    with pytest.warns(UserWarning, match="selects none of this module's metrics"):
        assert fleur_module.compute(metrics="clip_s", **kwargs) == {}  # another module's metric (evaluate.combine)


def test_batch_size_one_is_the_reference_procedure_within_float_rounding(fleur_module, judge):
    kwargs = dict(predictions=PREDICTIONS, references=REFERENCES, images=example_images(), fleur_model=judge,
                  metrics="fleur")
    batched = fleur_module.compute(**kwargs)
    alone = fleur_module.compute(fleur_batch_size=1, **kwargs)
    assert ",batch=1," in alone["signature"] and ",batch=8," in batched["signature"]
    for a, b in zip(alone["per_caption"]["fleur"], batched["per_caption"]["fleur"]):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-5)


@pytest.mark.parametrize("options, error, message", [
    (dict(images=None), ValueError, "fleur, ref_fleur need one image per prediction"),
    (dict(images=example_images()[:2]), ValueError, "3 predictions but 2 images"),
    (dict(fleur_batch_size=0), ValueError, r"^fleur_batch_size must be an integer >= 1, got 0\.$"),
    (dict(fleur_dtype="int8"), ValueError, r"^fleur_dtype must be one of 'auto', 'float32'"),
    (dict(fleur_explain="yes"), ValueError, r"^fleur_explain must be True or False"),
    (dict(fleur_model="/nowhere/llava"), FileNotFoundError, "fleur_model: /nowhere/llava is neither a folder"),
    (dict(fleur_temperature=0.2), ValueError, r"Unknown option\(s\) \['fleur_temperature'\]"),
])
def test_errors_are_one_line_and_need_no_judge(fleur_module, options, error, message):
    kwargs = {"predictions": PREDICTIONS, "references": REFERENCES, "images": example_images(), **options}
    with pytest.raises(error, match=message) as info:
        fleur_module.compute(**kwargs)
    assert "\n" not in str(info.value)


def test_space_app_reads_the_judge_from_the_environment(monkeypatch, judge):
    pytest.importorskip("gradio")
    needs("fleur")
    monkeypatch.delenv("CAPEVAL_FLEUR_MODEL", raising=False)
    app = runpy.run_path(str(ROOT / "metrics" / "fleur" / "app.py"), run_name="app")
    assert app["OPTIONS"] == {} and app["METRICS"] == ("fleur", "ref_fleur")
    monkeypatch.setenv("CAPEVAL_FLEUR_MODEL", judge)
    app = runpy.run_path(str(ROOT / "metrics" / "fleur" / "app.py"), run_name="app")
    assert app["OPTIONS"] == {"fleur_model": judge}


def test_space_callback_gives_capeval_scores_numbers(fleur_module, judge):
    """What app.py runs on Score (capeval.hf.space_inputs.score_image_captions) with the tiny judge."""
    from capeval.hf.space_inputs import DIGITS, score_image_captions

    images = [str(p) for p in example_images()]
    gallery = [(p, f"{i}. image") for i, p in enumerate(images, 1)]
    refs = [r if isinstance(r, list) else [r] for r in REFERENCES]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corpus, per_caption, signature = score_image_captions(
            fleur_module.compute, KEYS, gallery, "\n".join(PREDICTIONS), "\n".join(" | ".join(r) for r in refs),
            KEYS, {"fleur_model": judge})
    want = _quiet_score(PREDICTIONS, refs, metrics=KEYS, images=images, fleur_model=judge)
    assert signature == want["signature"]
    assert [k for k, _ in corpus] == KEYS
    for (_, value), key in zip(corpus, KEYS):
        assert value == round(want[key], DIGITS)
    for i, row in enumerate(per_caption["data"]):
        assert _same(row[3:], [round(want["per_caption"][k][i], DIGITS) for k in KEYS])
