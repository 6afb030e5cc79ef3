"""Multimodal-LLM caption judges: FLEUR and RefFLEUR (Lee et al., ACL 2024), computed as Yebin46/FLEUR's ``fleur.py``
and ``reffleur.py`` compute them with LLaVA-1.5 (the original LLaVA code, ``llava-torch``), the same prompt and
smoothing with any transformers vision-language model as the judge, and EXPERT (Kim et al. 2025: LLaVA-1.5 with a
LoRA adapter, hjkim811/EXPERT's ``expert.py``).

What goes here, data flowing one way (image + caption -> prompt -> token ids + pixels -> generated answer and digit
probabilities -> score):

* :mod:`.prompts`: FLEUR's instructions (verbatim), LLaVA's ``llava_v1`` conversation, the chat-template prompt of
  any other judge;
* :mod:`.answers`: reading the answer (the reference's parsing) and the score smoothing over the digit tokens'
  probabilities (pure functions over the generated ids and per-step probabilities);
* :mod:`.llava_layout`: the original LLaVA checkpoint layout (``liuhaotian/llava-v1.5-13b``) read as transformers'
  ``LlavaForConditionalGeneration`` (key names mapped as transformers' conversion script maps them);
* :mod:`.lora`: LLaVA LoRA adapters (EXPERT's) merged into a loaded judge as LLaVA's builder and peft merge them;
* :mod:`.judge`: a loaded judge (model, tokenizer, image preprocessing), its inputs (LLaVA's
  ``tokenizer_image_token``, images padded to a square), batched greedy generation;
* :mod:`.metric`: the ``fleur``, ``ref_fleur`` and ``expert`` metric classes registered in :mod:`capeval.registry`;
* :mod:`.random_llava`: seeded tiny LLaVA-1.5 models in both layouts, to verify the pipeline without downloads.

Torch and transformers are imported only when a judge is loaded, so ``import capeval.judges`` works without them.
Builds on :mod:`capeval.models` (image reading, devices); never imports ``api``, ``benchmarks``, ``hub`` or ``cli``.
See ``docs/judges.md``.
"""
