"""Every image a user may pass (capeval.models.image_cases), through capeval.score, the evaluate module, the CLI and
the Space: a finite score in [0, 1], or the documented error naming images[0] (and the path); EXIF photos scored
upright; random arrays of any dtype and layout never crash (hypothesis). A case that hangs fails by the timeouts below;
the seconds each case takes are measured by benchmarks/image_inputs.py."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("timm")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import capeval  # noqa: E402
from capeval.models.image_cases import image_cases  # noqa: E402

PRED, REFS = "a picture with a round shape", ["a colourful picture with a disc in the middle"]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("image-cases")
    capeval.score([PRED], [REFS], metrics=["critic"], images=[image_cases(folder)[0].item])  # load the models once
    return {case.name: case for case in image_cases(folder)}


def _check(case, run) -> None:
    if case.expect == "score":
        value = run()
        assert math.isfinite(value) and 0 <= value <= 1, (case.name, value)
    else:
        with pytest.raises(Exception) as info:
            run()
        import builtins

        # the kind of error, or a subclass of it (an unusable image is an ImageInputError, a ValueError)
        assert isinstance(info.value, getattr(builtins, case.expect)), (case.name, info.value)
        assert re.search(case.match, str(info.value)), (case.name, str(info.value))


@pytest.mark.timeout(600)  # a hang guard, not a speed claim
def test_every_case_through_capeval_score(cases):
    for case in cases.values():
        _check(case, lambda: capeval.score([PRED], [REFS], metrics=["critic"], images=[case.item])["critic"])


@pytest.mark.timeout(600)
def test_every_case_through_the_evaluate_module(cases):
    evaluate = pytest.importorskip("evaluate")
    from support import ROOT

    module = evaluate.load(str(ROOT / "metrics" / "learned_critic"))
    for case in cases.values():
        _check(case, lambda: module.compute(predictions=[PRED], references=[REFS], images=[case.item],
                                            metrics="critic")["critic"])


@pytest.mark.timeout(600)
def test_every_file_case_through_the_cli_and_the_space(cases, tmp_path, capsys):
    from capeval.cli import main
    from capeval.hf.space_inputs import SpaceInputError, score_image_captions

    (tmp_path / "p.json").write_text(json.dumps([PRED]))
    (tmp_path / "r.json").write_text(json.dumps([REFS]))
    module_compute = lambda **kw: capeval.score(kw.pop("predictions"), kw.pop("references"), **kw)  # noqa: E731
    for case in (c for c in cases.values() if c.is_file):
        (tmp_path / "images.txt").write_text(case.item + "\n")
        rc = main(["score", "--predictions", str(tmp_path / "p.json"), "--references", str(tmp_path / "r.json"),
                   "--metrics", "critic", "--images", str(tmp_path / "images.txt"), "--json", "-"])
        captured = capsys.readouterr()
        if case.expect == "score":
            assert rc == 0 and 0 <= json.loads(captured.out)["critic"] <= 1, (case.name, captured.err)
        else:
            # one line naming the file (the CLI names the list's line, or images[0], and the path)
            assert rc == 1 and Path(case.item).name in captured.err and "Traceback" not in captured.err, \
                (case.name, captured.err)
            assert len(captured.err.strip().splitlines()) == 1
        if case.expect == "score":
            rows, _, _ = score_image_captions(module_compute, ["critic"], [case.item], PRED, " | ".join(REFS),
                                              metrics=["critic"])
            assert 0 <= rows[0][1] <= 1, case.name
        else:
            with pytest.raises(SpaceInputError):
                score_image_captions(module_compute, ["critic"], [case.item], PRED, " | ".join(REFS),
                                     metrics=["critic"])


def test_exif_rotated_photos_are_scored_upright(cases):
    from PIL import Image

    from capeval.models.image_encoder import load_image_encoder

    encoder = load_image_encoder(cache=False)
    upright, exif = cases["JPEG photo"].item, cases["EXIF-rotated JPEG"].item
    sideways = Image.open(exif).convert("RGB")  # the stored pixels, EXIF ignored
    feats = encoder.encode([upright, exif, sideways])
    cos = lambda a, b: float((a @ b) / (a.norm() * b.norm()))  # noqa: E731
    assert cos(feats[0], feats[1]) > 0.97 and cos(feats[0], feats[1]) > cos(feats[0], feats[2]) + 0.02


ARRAY = st.tuples(
    st.sampled_from(["uint8", "uint16", "bool", "int16", "int64", "float32", "float64"]),
    st.sampled_from(["HW", "HW1", "HW3", "HW4", "1HW", "3HW", "4HW", "HW2", "5HW", "HWC9"]),
    st.integers(1, 24), st.integers(1, 24), st.integers(0, 2 ** 16), st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=ARRAY)
def test_random_arrays_score_in_range_or_are_refused_naming_the_item(spec):
    """Any dtype, layout, size and value range: a score in [0, 1] or a ValueError naming images[0], nothing else."""
    import numpy as np

    dtype, layout, h, w, seed, in_range = spec
    shape = {"HW": (h, w), "HW1": (h, w, 1), "HW3": (h, w, 3), "HW4": (h, w, 4), "1HW": (1, h, w),
             "3HW": (3, h, w), "4HW": (4, h, w), "HW2": (h, w, 2), "5HW": (5, h, w), "HWC9": (h, w, 9)}[layout]
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        array = rng.random(shape) > 0.5
    elif dtype.startswith("float"):
        array = rng.random(shape).astype(dtype) * (1 if in_range else 300)
    else:
        top = {"uint8": 255, "uint16": 65535, "int16": 255 if in_range else 32000, "int64": 255 if in_range else 999}
        array = rng.integers(0, top[dtype] + 1, size=shape).astype(dtype)
    try:
        out = capeval.score([PRED], [REFS], metrics=["critic"], images=[array])["critic"]
    except ValueError as err:
        assert str(err).startswith("images[0]"), str(err)
    else:
        assert math.isfinite(out) and 0 <= out <= 1
