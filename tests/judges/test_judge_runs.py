"""The judges through the command line, in two processes, and with prompts longer than the judge's context."""
from __future__ import annotations

import json
import math
import warnings

import pytest

import capeval
from capeval.judges.answers import JudgeContextWarning, JudgeFailureWarning
from support import run_python

pytest.importorskip("torch")


def _inputs(tmp_path):
    from capeval.io import example_images
    from capeval.judges.random_llava import CAPTIONS, REFERENCES

    predictions, references, images = [], [], []
    for photo, captions, refs in zip(example_images()[:3], CAPTIONS, REFERENCES):
        for caption in captions:
            predictions.append(caption)
            references.append(list(refs))
            images.append(str(photo))
    (tmp_path / "p.json").write_text(json.dumps(predictions))
    (tmp_path / "r.json").write_text(json.dumps(references))
    (tmp_path / "images.txt").write_text("\n".join(images) + "\n")
    return predictions, references, images


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-5, (a, b)


@pytest.mark.parametrize("processes", [1, 2])
def test_cli_scores_equal_the_api(tiny_llava, tmp_path, processes):
    if processes > 1:
        pytest.importorskip("accelerate")
    predictions, references, images = _inputs(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        want = capeval.score(predictions, references, metrics=["fleur", "ref_fleur"], images=images,
                             fleur_model=str(tiny_llava["hf"]), fleur_batch_size=4)
    out = tmp_path / "out.json"
    args = ["-m", "capeval", "score", "--predictions", str(tmp_path / "p.json"), "--references",
            str(tmp_path / "r.json"), "--images", str(tmp_path / "images.txt"), "--metrics", "fleur,ref_fleur",
            "--fleur-model", str(tiny_llava["hf"]), "--fleur-batch-size", "4", "--json", str(out)]
    if processes > 1:
        args += ["--processes", str(processes)]
    proc = run_python(args, timeout=900, env={"CAPEVAL_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(out.read_text(), parse_constant=lambda c: float(c))
    for name in ("fleur", "ref_fleur"):
        _same(got["per_caption"][name], want["per_caption"][name])
        assert [f["index"] for f in got["judge_failures"][name]] == [f["index"] for f in want["judge_failures"][name]]
    assert got["signature"] == want["signature"]
    if want["judge_failures"]["fleur"]:
        assert "fleur: the judge's answer gave no score for" in proc.stderr


def test_a_prompt_over_the_context_is_scored_whole_and_warned(tiny_llava, tmp_path):
    """The tiny judge's context is 1,024 positions: a 900-word caption does not fit with 512 answer tokens."""
    from capeval.io import example_images

    long = " ".join(["a cat on a mat"] * 180)
    with pytest.warns(JudgeContextWarning, match=r"1 prompt\(s\) with up to 512 answer tokens exceed the judge's "
                                                 r"1024-token context \(items 1\)"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JudgeFailureWarning)
            result = capeval.score(["a tabby cat looking at the camera", long], [["a cat"], ["a cat"]],
                                   metrics="fleur", images=[example_images()[0]] * 2,
                                   fleur_model=str(tiny_llava["hf"]))
    assert len(result["per_caption"]["fleur"]) == 2
