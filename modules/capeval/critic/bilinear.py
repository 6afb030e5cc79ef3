"""Compact bilinear pooling (Gao et al. CVPR 2016; Fukui et al. 2016): the critic's ``bilinear`` head.

The outer product of ``x`` [n, dx] and ``y`` [n, dy] is approximated in ``dim`` (8,192) dimensions as the circular
convolution of their count sketches, computed with FFTs: ``irfft(rfft(Ψ(x)) · rfft(Ψ(y)))``. A count sketch
``Ψ`` maps input ``i`` to bucket ``h[i]`` with sign ``s[i]``; ``h`` and ``s`` are drawn once from ``seed`` and
saved with the model (buffers), so a saved critic scores the same after loading.
"""
from __future__ import annotations

from capeval.dependencies import require

torch = require("torch", what="the critic")
nn = torch.nn


class CountSketch(nn.Module):
    """``Ψ(x)``: ``[n, in_dim]`` -> ``[n, dim]``, fixed random buckets and signs."""

    def __init__(self, in_dim: int, dim: int, generator):
        super().__init__()
        self.dim = dim
        self.register_buffer("buckets", torch.randint(dim, (in_dim,), generator=generator))
        self.register_buffer("signs", (torch.randint(2, (in_dim,), generator=generator) * 2 - 1).float())

    def forward(self, x):
        out = x.new_zeros(x.shape[0], self.dim)
        return out.index_add_(1, self.buckets, x * self.signs)


class CompactBilinearPooling(nn.Module):
    """``[n, dx]``, ``[n, dy]`` -> ``[n, dim]``, then signed square root and L2 normalisation (as Gao et al.)."""

    def __init__(self, x_dim: int, y_dim: int, dim: int = 8192, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.dim = dim
        self.sketch_x = CountSketch(x_dim, dim, g)
        self.sketch_y = CountSketch(y_dim, dim, g)

    def forward(self, x, y):
        fx = torch.fft.rfft(self.sketch_x(x.float()), n=self.dim)
        fy = torch.fft.rfft(self.sketch_y(y.float()), n=self.dim)
        z = torch.fft.irfft(fx * fy, n=self.dim)
        z = torch.sign(z) * torch.sqrt(z.abs() + 1e-12)
        return nn.functional.normalize(z, dim=1)
