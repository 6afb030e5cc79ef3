"""Vision-language scores: CLIP-S and RefCLIP-S (Hessel et al. 2021), PAC-S and RefPAC-S (Sarto et al. 2023), computed
as their reference code computes them (jmhessel/clipscore's ``clipscore.py``; aimagelab/pacscore's ``pac_score.py`` and
``compute_metrics.py``).

What goes here, data flowing one way (images + texts -> pixels / token ids -> features -> scores):

* :mod:`.tokenizer`: OpenAI's CLIP tokenizer, the "A photo depicts " prefix, the reference truncation at 77 tokens;
* :mod:`.checkpoints`: OpenAI-format checkpoints (PAC-S's included) read without running code, the architecture
  inferred from the shapes; PAC-S's open_clip release (GELU) known by name, PAC-S++'s LoRA checkpoints refused;
* :mod:`.backends`: one interface over open_clip and transformers CLIP models (Hub ids, folders, files, open_clip
  names), loaded once per process;
* :mod:`.features`: image features (capeval's image reading rules, then the reference preprocessing; each image decoded
  and encoded once) and text features (each text once), cached per process;
* :mod:`.scores`: the functional core (w·max(cos, 0), the best reference cosine, the harmonic mean);
* :mod:`.metric`: the ``clip_s``, ``ref_clip_s``, ``pac_s`` and ``ref_pac_s`` metric classes registered in
  :mod:`capeval.registry`.

Torch, torchvision and open_clip are imported only when something is encoded, so ``import capeval.vision_language``
works without them. Builds on :mod:`capeval.models` (image reading, devices); never imports the learned metrics,
``api``, ``benchmarks``, ``hub`` or ``cli``. See ``docs/architecture.md``.
"""
from __future__ import annotations

from capeval.vision_language.scores import (CLIP_S_WEIGHT, PAC_S_WEIGHT, harmonic_mean, image_text_scores,
                                            reference_scores)

__all__ = ["CLIP_S_WEIGHT", "PAC_S_WEIGHT", "harmonic_mean", "image_text_scores", "reference_scores"]
