"""metrics/learned_critic through `evaluate`, with tiny random critics passed by option: the numbers of
`capeval.score`, images as paths, PIL images and datasets.Image values, the default variant with and without
images, `metrics=` choosing explicitly, and the errors (critic without images, a bad image)."""
from __future__ import annotations

import warnings

import pytest
from support import ROOT

import capeval
from capeval.io import example_images

evaluate = pytest.importorskip("evaluate")

PREDICTIONS = ["a tabby cat looking at the camera", "a woman astronaut in an orange suit",
               "of coffee cup a saucer on a"]
REFERENCES = [["a cat with stripes", "a striped cat staring"], ["an astronaut in front of a flag"],
              ["a cup of coffee on a saucer", "coffee in a white cup"]]
ALL = ["critic", "critic_ref", "critic_img"]

pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(ROOT / "metrics" / "learned_critic"))


@pytest.fixture
def paths():
    return [str(p) for p in example_images()]


def _same(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key in ALL:
        if key in want:
            assert got[key] == want[key], key
            assert got["per_caption"][key] == want["per_caption"][key], key
    assert got["signature"] == want["signature"]


def test_example_images_are_bundled_small_jpegs():
    images = example_images()
    assert [p.name for p in images] == ["chelsea.jpg", "astronaut.jpg", "coffee.jpg"]
    for path in images:
        assert path.is_file() and path.read_bytes()[:2] == b"\xff\xd8" and path.stat().st_size < 30_000
    assert (images[0].parent / "PROVENANCE.md").is_file()


def test_all_three_with_image_paths_equal_capeval_score(module, tiny_critics, paths):
    got = module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths, metrics=ALL, **tiny_critics)
    want = capeval.score(PREDICTIONS, REFERENCES, metrics=ALL, images=paths, **tiny_critics)
    _same(got, want)
    assert list(got)[:3] == ALL
    for key in ALL:
        assert all(0.0 <= p <= 1.0 for p in got["per_caption"][key])
        assert got[key] == pytest.approx(sum(got["per_caption"][key]) / 3)
    assert "critic:model=critic@" in got["signature"] and "ctx=image+reference,refs=mean" in got["signature"]


def test_pil_images_and_datasets_values_score_like_paths(module, tiny_critics, paths):
    from PIL import Image

    by_path = module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths, metrics=ALL,
                             **tiny_critics)
    pil = module.compute(predictions=PREDICTIONS, references=REFERENCES, images=[Image.open(p) for p in paths],
                         metrics=ALL, **tiny_critics)
    dicts = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=ALL, **tiny_critics,
                           images=[{"path": p, "bytes": None} for p in paths])
    for key in ("critic", "critic_img"):
        assert pil["per_caption"][key] == pytest.approx(by_path["per_caption"][key], abs=1e-5)
        assert dicts["per_caption"][key] == pytest.approx(by_path["per_caption"][key], abs=1e-6)
    assert pil["per_caption"]["critic_ref"] == by_path["per_caption"]["critic_ref"]  # reads no image


def test_default_is_critic_with_images_and_critic_ref_without(module, tiny_critics, paths):
    with_images = module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths, **tiny_critics)
    assert sorted(with_images) == ["coverage", "coverage_per_caption", "critic", "per_caption",
                                   "reference_coverage", "signature"]
    _same(with_images, capeval.score(PREDICTIONS, REFERENCES, metrics="critic", images=paths, **tiny_critics))
    without = module.compute(predictions=PREDICTIONS, references=REFERENCES, **tiny_critics)
    assert sorted(without) == ["coverage", "coverage_per_caption", "critic_ref", "per_caption",
                                   "reference_coverage", "signature"]
    _same(without, capeval.score(PREDICTIONS, REFERENCES, metrics="critic_ref", **tiny_critics))


def test_critic_ref_needs_no_image(module, tiny_critics):
    got = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["critic_ref"],
                         critic_ref_model=tiny_critics["critic_ref_model"])
    assert set(got["per_caption"]) == {"critic_ref"} and "ctx=reference" in got["signature"]
    one_string = module.compute(predictions=PREDICTIONS[:1], references=["a cat with stripes"], metrics="critic_ref",
                                critic_ref_model=tiny_critics["critic_ref_model"])
    assert one_string["critic_ref"] == capeval.score(PREDICTIONS[:1], [["a cat with stripes"]], metrics="critic_ref",
                                                     critic_ref_model=tiny_critics["critic_ref_model"])["critic_ref"]


@pytest.mark.parametrize("metrics", ["critic", ["critic_img"], "critic,critic_ref"])
def test_image_critics_without_images_are_a_clear_error(module, tiny_critics, metrics):
    with pytest.raises(ValueError, match=r"needs? one image per prediction: pass images=.*or use critic_ref"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=metrics, **tiny_critics)


def test_bad_images_name_the_item(module, tiny_critics, paths, tmp_path):
    bad = tmp_path / "not-an-image.jpg"
    bad.write_bytes(b"this is text, not a JPEG")
    with pytest.raises(ValueError, match=r"images\[1\] \(.*not-an-image\.jpg\) is not a readable image"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, images=[paths[0], str(bad), paths[2]],
                       metrics="critic", **tiny_critics)
    with pytest.raises(ValueError, match="3 predictions but 2 images"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths[:2], **tiny_critics)
    with pytest.raises(FileNotFoundError, match="images\\[0\\]"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, images=[str(tmp_path / "gone.jpg")] * 3,
                       metrics="critic_img", **tiny_critics)


def test_other_modules_metrics_give_nothing_here(module, tiny_critics, paths):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths, metrics="bleu_1",
                              cider_df="references", **tiny_critics) == {}
    assert any("selects none of this module's metrics" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="Unknown option"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, critic_modle="x")


def test_combine_with_the_coco_module_sends_images_to_both(tiny_critics, paths):
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(ROOT / "metrics" / "learned_critic")])
    got = combined.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths, metrics="bleu_1,critic",
                           **tiny_critics)
    want = capeval.score(PREDICTIONS, REFERENCES, metrics="bleu_1,critic", images=paths, **tiny_critics)
    assert got["bleu_1"] == want["bleu_1"] and got["critic"] == want["critic"]


def test_a_critic_of_the_wrong_context_is_refused(module, tiny_critics, paths):
    with pytest.raises(ValueError, match="critic expects a critic with context 'image\\+reference'"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths, metrics="critic",
                       critic_model=tiny_critics["critic_ref_model"])


def test_critic_plus_equals_capeval_score_and_needs_images(module, tiny_critics, tiny_plus, paths):
    """critic_plus through the module: a combiner over the tiny image + reference critic, with a stand-in sentence
    encoder (the real MiniLM is tested in tests/critic/test_critic_plus.py)."""
    folder = tiny_plus
    got = module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths, metrics=["critic_plus"],
                         critic_plus_model=str(folder))
    want = capeval.score(PREDICTIONS, REFERENCES, metrics="critic_plus", images=paths, critic_plus_model=str(folder))
    assert sorted(got) == ["coverage", "coverage_per_caption", "critic_plus", "per_caption", "reference_coverage",
                           "signature"]
    assert got["critic_plus"] == want["critic_plus"] and got["per_caption"] == want["per_caption"]
    assert got["signature"] == want["signature"] and "encoder=fake-letters" in got["signature"]
    assert all(0.0 < p < 1.0 for p in got["per_caption"]["critic_plus"])
    # with the three critics in one call: each key as alone
    every = module.compute(predictions=PREDICTIONS, references=REFERENCES, images=paths,
                           metrics="critic,critic_ref,critic_img,critic_plus", critic_plus_model=str(folder),
                           **tiny_critics)
    assert list(every)[:4] == ["critic", "critic_ref", "critic_img", "critic_plus"]
    assert every["per_caption"]["critic_plus"] == got["per_caption"]["critic_plus"]
    with pytest.raises(ValueError, match=r"critic_plus needs? one image per prediction"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="critic_plus",
                       critic_plus_model=str(folder))
