"""critic_img has no default model: asked for without critic_img_model it says why and names the
alternatives, before anything is read; named, it scores as before."""
from __future__ import annotations

import pytest

import capeval


def test_critic_img_without_a_model_says_why_and_names_the_alternatives():
    with pytest.raises(ValueError, match=r"critic_img has no default model.*at chance.*clip_s or pac_s.*critic_ref.*"
                                         r"critic_img_model='critic-flickr8k-img'"):
        capeval.score(["a dog"], [["a dog runs"]], metrics="critic_img", images=["never-read.jpg"])


def test_critic_img_with_a_named_model_scores(tiny_critics):
    from support.images import write_pngs

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        images = [str(p) for p in write_pngs(Path(folder), 2)]
        result = capeval.score(["a dog", "a cat"], [["a dog runs"], ["a cat"]], metrics="critic_img", images=images,
                               critic_img_model=tiny_critics["critic_img_model"])
    assert 0.0 <= result["critic_img"] <= 1.0
