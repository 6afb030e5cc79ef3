"""Batch-norm folding: used only when the folded copy agrees with the original."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")

from capeval.models.inference import fold_batchnorm  # noqa: E402


def _random_stats(model):
    gen = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
    return model.eval()


@pytest.mark.parametrize("name, count", [("resnet18", 20), ("test_efficientnet", 13)])
def test_folding_keeps_the_outputs(name, count):
    model = _random_stats(timm.create_model(name, pretrained=False, num_classes=0))
    x = torch.randn(2, 3, 96, 96)
    folded, n = fold_batchnorm(model, x)
    assert n == count and folded is not model
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in folded.modules())
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())  # the original is untouched
    with torch.inference_mode():
        torch.testing.assert_close(folded(x), model(x), rtol=0, atol=1e-4)


class NormFirst(torch.nn.Module):
    """Registers conv before bn but applies bn first: the layout lies, so folding must be refused."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)

    def forward(self, x):
        return self.conv(self.bn(x))


def test_a_misleading_layout_is_detected_and_left_alone():
    model = _random_stats(NormFirst())
    model.bn.running_mean.fill_(2.0)
    assert fold_batchnorm(model, torch.randn(1, 3, 8, 8)) == (model, 0)


def test_models_without_batch_norm_are_returned_as_they_are():
    model = timm.create_model("test_vit", pretrained=False, num_classes=0)
    assert fold_batchnorm(model, torch.randn(1, 3, 160, 160)) == (model, 0)


def test_ieee_float32_turns_tf32_off_inside_and_restores_the_callers_settings():
    from capeval.models.inference import ieee_float32

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        for outside in ((True, True), (True, False), (False, True)):
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = outside
            with ieee_float32():
                assert (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32) == (False, False)
            assert (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32) == outside
        torch.backends.cudnn.allow_tf32 = True
        with pytest.raises(RuntimeError), ieee_float32():
            raise RuntimeError("a failing forward pass")
        assert torch.backends.cudnn.allow_tf32 is True
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def test_ieee_float32_overlapping_in_threads_restores_only_when_the_last_leaves():
    """Two threads' blocks overlapping (CLIP's text thread and image loop): TF32 stays off until both have left, then
    the settings from before the first are back."""
    import threading

    from capeval.models.inference import ieee_float32

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    inside, leave = threading.Event(), threading.Event()

    def other():
        with ieee_float32():
            inside.set()
            leave.wait(10)

    try:
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
        with ieee_float32():
            thread = threading.Thread(target=other)
            thread.start()
            assert inside.wait(10)
        # the first block has left, the other thread's is still open: TF32 must stay off
        assert (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32) == (False, False)
        leave.set()
        thread.join(10)
        assert (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32) == (True, True)
    finally:
        leave.set()
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def test_forward_passes_run_in_ieee_float32(monkeypatch, tiny_critics):
    """The image encoder and the critic compute inside ieee_float32 (TF32 off on a GPU); so does the sentence encoder
    (same import; its model is not loaded here)."""
    import capeval.models.inference as inference
    from capeval.models.image_encoder import load_image_encoder

    seen = []
    real = inference.ieee_float32

    def spy():
        seen.append(True)
        return real()

    import capeval.critic.scoring as scoring
    import capeval.models.image_encoder as image_encoder
    import capeval.models.sentence_encoder as sentence_encoder
    for module in (image_encoder, scoring, sentence_encoder):
        assert module.ieee_float32 is real
        monkeypatch.setattr(module, "ieee_float32", spy)
    encoder = load_image_encoder(pretrained=False, cache=False, device="cpu")
    encoder.forward(torch.zeros(1, 3, 224, 224).uniform_())
    assert len(seen) == 1
    import capeval

    capeval.score(["a dog runs"], [["a dog is running"]], metrics=["critic_ref"],
                  critic_ref_model=tiny_critics["critic_ref_model"], progress=False)
    assert len(seen) == 2
