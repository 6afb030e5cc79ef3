"""Inference-only speed-ups for torch models, each verified numerically before it is used.

:func:`fold_batchnorm` folds every eval-mode batch norm into the convolution that feeds it (``W' = W·γ/σ``,
``b' = (b − μ)·γ/σ + β``), removing about a quarter of EfficientNet-Lite0's CPU time. Which convolution feeds
which norm is read from the module layout (a ``Conv2d`` child registered right before a ``BatchNorm2d``
sibling, as in timm's EfficientNet, ResNet and ``Sequential`` blocks); because a layout can lie, the folded
copy is compared with the original on a random input and discarded unless they agree to float rounding
(relative 1e-4). The outputs then differ from the unfolded model's by about 1e-6 relative (Lite0: max
|diff| 1e-5 on features up to ~6), the size of the differences between thread counts or batch sizes.
"""
from __future__ import annotations

import contextlib
import copy
import threading

from capeval.dependencies import require

#: Largest accepted difference between folded and original outputs, relative to the largest output.
FOLD_TOLERANCE = 1e-4


def fold_batchnorm(model, example):
    """``(model', n)``: an eval-mode copy of ``model`` with ``n`` batch norms folded into their convolutions,
    or ``(model, 0)`` when there is nothing to fold or the folded copy disagrees with ``model`` on ``example``.
    """
    torch = require("torch")
    nn = torch.nn
    if not any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
        return model, 0
    folded = copy.deepcopy(model).eval()
    count = 0
    with torch.no_grad():
        for parent in list(folded.modules()):
            children = list(parent.named_children())
            for (_, conv), (bn_name, bn) in zip(children, children[1:]):
                if not isinstance(conv, nn.Conv2d) or not isinstance(bn, nn.BatchNorm2d) \
                        or bn.running_var is None or conv.out_channels != bn.num_features:
                    continue
                scale = (bn.weight if bn.affine else torch.ones_like(bn.running_var)) / torch.sqrt(bn.running_var + bn.eps)
                shift = bn.bias if bn.affine else torch.zeros_like(bn.running_mean)
                bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
                conv.weight = nn.Parameter(conv.weight * scale.view(-1, 1, 1, 1), requires_grad=False)
                conv.bias = nn.Parameter((bias - bn.running_mean) * scale + shift, requires_grad=False)
                # timm's BatchNormAct2d = norm, then drop, then act: keep what follows the norm
                setattr(parent, bn_name, nn.Sequential(getattr(bn, "drop", nn.Identity()), getattr(bn, "act", nn.Identity())))
                count += 1
    if count == 0:
        return model, 0
    with torch.inference_mode():
        expected, got = model.eval()(example), folded(example)
    if expected.shape != got.shape or not torch.isfinite(got).all():
        return model, 0
    if (expected - got).abs().max().item() > FOLD_TOLERANCE * max(1.0, expected.abs().max().item()):
        return model, 0
    return folded, count


_IEEE_LOCK = threading.Lock()
_IEEE_DEPTH = 0
_IEEE_SAVED: tuple = ()


@contextlib.contextmanager
def ieee_float32():
    """Run float32 work on a GPU in full float32 (IEEE) precision, not TF32.

    PyTorch lets cuDNN's convolutions and recurrent layers use TF32 by default (``torch.backends.cudnn.allow_tf32``,
    10-bit mantissa on Ampere and later): on an H100 that moved EfficientNet-Lite0's features by 2.3e-3 relative and the
    critic's scores by up to 0.003 against the CPU's (BENCHMARKS.md, the GPU rows). Inside this block both TF32
    switches (cuDNN, and cuBLAS matmuls) are off, so a score does not depend on the card; the caller's settings are
    restored on the way out. No effect on the CPU, nor under ``torch.autocast`` (float16/bfloat16 are chosen there).
    """
    torch = require("torch")
    global _IEEE_DEPTH, _IEEE_SAVED
    with _IEEE_LOCK:  # threads may overlap (CLIP's image and text encoders): the first in saves, the last out restores
        if _IEEE_DEPTH == 0:
            _IEEE_SAVED = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        _IEEE_DEPTH += 1
    try:
        yield
    finally:
        with _IEEE_LOCK:
            _IEEE_DEPTH -= 1
            if _IEEE_DEPTH == 0:
                torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = _IEEE_SAVED
