"""LLaVA's image input within a memory budget: an elongated strip is reduced before it is padded
to a square (a 20000×1 image would build a 20000² canvas); photos are padded and preprocessed as LLaVA does."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

Image = pytest.importorskip("PIL.Image")
transformers = pytest.importorskip("transformers")

from capeval.judges import judge as judge_module  # noqa: E402
from capeval.judges.judge import PAD_MAX_SIDE, bounded_for_padding, expand_to_square, llava_pixels  # noqa: E402


def _judge():
    processor = transformers.CLIPImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    return SimpleNamespace(image_processor=processor, pad_color=tuple(int(x * 255) for x in processor.image_mean))


@pytest.mark.parametrize("size", [(20000, 1), (1, 50000), (5000, 100)])
def test_a_strip_builds_a_bounded_canvas(size, monkeypatch):
    canvases = []
    real = judge_module.expand_to_square

    def spy(image, colour):
        out = real(image, colour)
        canvases.append(out.size)
        return out

    monkeypatch.setattr(judge_module, "expand_to_square", spy)
    pixels = llava_pixels(_judge(), Image.new("RGB", size, (200, 30, 30)))
    assert tuple(pixels.shape) == (3, 336, 336)
    assert canvases and max(canvases[0]) <= PAD_MAX_SIDE


@pytest.mark.parametrize("size", [(300, 200), (6000, 4000), (4096, 1)])
def test_photos_are_padded_as_llava_pads_them(size):
    image = Image.new("RGB", size, (10, 120, 30))
    assert bounded_for_padding(image) is image
    judge = _judge()
    want = judge.image_processor.preprocess(expand_to_square(image, judge.pad_color),
                                            return_tensors="pt")["pixel_values"][0]
    assert (llava_pixels(judge, image) == want).all()
