"""Torch building blocks shared by every learned part of capeval (home reserved; filled by the learned foundation).

What goes here (and nothing metric-specific):

* image encoders: any timm model by name, the offline EfficientNet-Lite0 default, feature caching;
* the Flickr8k captioner (a transformers ``PreTrainedModel`` with ``generate()``), its tokenizer;
* caption language models P(s) (``caption_lm``: tokenisation, vocabulary, unigram, interpolation, any
  transformers causal LM, perplexity; ``lstm_lm``: the 1-layer LSTM LM; ``lstm_train``: its training with
  accelerate; ``lm_loading``: load any saved one);
* checkpoint loading and saving (safetensors, ``save_pretrained`` / ``from_pretrained``).

Rules: torch and friends are imported lazily (``import capeval`` never imports torch); a missing
optional dependency raises ``ImportError`` naming ``pip install "capeval[learned]"``. May import the
text pipeline and the foundation modules (``paths``, ``progress``, ``io``); never a metric family,
``benchmarks``, ``hub`` or ``cli``. See ``docs/architecture.md``.
"""
