"""A small image captioner as a ``transformers`` model: a Transformer decoder with cross-attention over image regions.

>>> from capeval.models.captioner import CaptionerForImageCaptioning
>>> model = CaptionerForImageCaptioning.from_pretrained(path)              # or capeval.models.pretrained
>>> out = model.generate(image_features=feats, num_beams=3, num_return_sequences=3,
...                      output_scores=True, return_dict_in_generate=True)
>>> out.sequences_scores                                                    # log P(s|I), natural log

Architecture (all sizes in :class:`CaptionerConfig`): the image's feature map (``[regions, feature_dim]``;
EfficientNet-Lite0 at 224² gives 7×7 = 49 regions of 1280 channels) plus its mean as one more region is
layer-normed and projected to ``hidden_size``; every decoder layer (pre-norm) does causal self-attention
over the words so far (keys/values in a ``transformers`` ``DynamicCache`` during generation), cross-attention
over the regions and a feed-forward block; a linear layer gives the next-word logits.

* ``image_features``: ``[batch, regions, feature_dim]``, ``[batch, feature_dim, H, W]`` (a CNN grid, as
  :meth:`capeval.models.image_encoder.ImageEncoder.encode` returns with ``kind="grid"``) or ``[batch,
  feature_dim]`` (pooled: one region). The encoder that made them is recorded in the config (``encoder``,
  ``encoder_resolution``, ``feature_kind``) so that :func:`caption_images` can rebuild it.
* ``image_embeds``: what :meth:`~CaptionerForImageCaptioning.encode_images` makes of them (the cross-attention
  keys and values of every layer, ``[batch, 2 * layers, regions + 1, hidden_size]``); ``generate`` computes
  them once, not at every step.
* ``generate`` is ``transformers``' own (beam search, sampling, ``num_return_sequences``, ``sequences_scores``):
  the generation defaults are ``length_penalty=0.0`` (so a beam's ``sequences_scores`` is its summed log
  probability, ``<eos>`` included: log P(s|I)), ``max_new_tokens=24``, ``num_beams=3`` (pass ``num_beams=1``
  for greedy decoding or sampling) and :meth:`caption_constraints` (no ``<unk>``, no empty caption). :meth:`caption_log_probs` gives the
  same log P(s|I) for given token ids (teacher forcing).
* Prompts (``input_ids``) must be unpadded: every row starts with ``<bos>`` at position 0.
* ``transformers.Trainer`` / ``Seq2SeqTrainer(predict_with_generate=True)``: batch rows with
  :class:`CaptionerDataCollator` (``image_features`` and ``labels`` only). ``forward`` builds ``input_ids`` from
  ``labels`` (``<bos>`` + the labels shifted right) and honours the Trainer's ``num_items_in_batch``;
  ``generate`` refuses ``input_ids`` passed together with ``labels`` (the Trainer hands it the whole batch, and
  it would continue the reference captions instead of captioning the images).
"""
from __future__ import annotations

import math

from capeval.dependencies import require

torch, transformers = require("torch", "transformers", what="the captioner")
nn = torch.nn
F = torch.nn.functional

MODEL_TYPE = "capeval-captioner"


class CaptionerConfig(transformers.PretrainedConfig):
    """Sizes of the captioner and the image features it reads.

    ``vocab_size`` (words incl. the 4 special tokens), ``feature_dim`` (channels of the image features, 1280 for
    EfficientNet-Lite0), ``hidden_size`` (256), ``num_hidden_layers`` (2), ``num_attention_heads`` (4),
    ``intermediate_size`` (1024), ``dropout`` (0.3: on the image regions, the embeddings and every residual branch; none inside attention), ``max_position_embeddings``
    (40 tokens incl. ``<bos>``), ``encoder``/``encoder_resolution``/``feature_kind``: the capeval image encoder
    settings the features come from.
    """

    model_type = MODEL_TYPE

    def __init__(self, vocab_size: int = 8, feature_dim: int = 1280, hidden_size: int = 256,
                 num_hidden_layers: int = 2, num_attention_heads: int = 4, intermediate_size: int = 1024,
                 dropout: float = 0.3, max_position_embeddings: int = 40, encoder: str = "efficientnet-lite0",
                 encoder_resolution: int | str = 224, feature_kind: str = "grid", pad_token_id: int = 0,
                 bos_token_id: int = 1, eos_token_id: int = 2, unk_token_id: int = 3, **kwargs):
        if hidden_size % num_attention_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_attention_heads {num_attention_heads}.")
        if feature_kind not in ("grid", "pooled"):
            raise ValueError(f"feature_kind must be 'grid' or 'pooled', got {feature_kind!r}.")
        self.vocab_size, self.feature_dim, self.hidden_size = vocab_size, feature_dim, hidden_size
        self.num_hidden_layers, self.num_attention_heads = num_hidden_layers, num_attention_heads
        self.intermediate_size, self.dropout = intermediate_size, dropout
        self.max_position_embeddings = max_position_embeddings
        self.encoder, self.encoder_resolution, self.feature_kind = encoder, encoder_resolution, feature_kind
        self.unk_token_id = unk_token_id
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id, **kwargs)


class _SelfAttention(nn.Module):
    def __init__(self, config: CaptionerConfig, layer_idx: int):
        super().__init__()
        self.heads, self.layer_idx = config.num_attention_heads, layer_idx
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, past_key_values=None, key_padding=None):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        past = 0
        if past_key_values is not None:
            past = past_key_values.get_seq_length(self.layer_idx)
            k, v = past_key_values.update(k, v, self.layer_idx)
        mask = None
        if t > 1 or key_padding is not None:
            total = k.shape[2]
            mask = torch.ones(t, total, dtype=torch.bool, device=x.device).tril(diagonal=past)[None, None]
            if key_padding is not None:
                mask = mask & key_padding[:, None, None, -total:].bool()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class _CrossAttention(nn.Module):
    def __init__(self, config: CaptionerConfig):
        super().__init__()
        self.heads = config.num_attention_heads
        self.q = nn.Linear(config.hidden_size, config.hidden_size)
        self.kv = nn.Linear(config.hidden_size, 2 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)

    def keys_values(self, memory):
        return self.kv(memory).chunk(2, dim=-1)

    def forward(self, x, k, v):
        b, t, d = x.shape
        h = self.heads
        q = self.q(x).view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, -1, h, d // h).transpose(1, 2)
        v = v.view(b, -1, h, d // h).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class _DecoderLayer(nn.Module):
    def __init__(self, config: CaptionerConfig, layer_idx: int):
        super().__init__()
        d = config.hidden_size
        self.norm_self, self.norm_cross, self.norm_ffn = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = _SelfAttention(config, layer_idx)
        self.cross_attn = _CrossAttention(config)
        self.ffn = nn.Sequential(nn.Linear(d, config.intermediate_size), nn.GELU(),
                                 nn.Linear(config.intermediate_size, d))
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x, k, v, past_key_values=None, key_padding=None):
        x = x + self.drop(self.self_attn(self.norm_self(x), past_key_values, key_padding))
        x = x + self.drop(self.cross_attn(self.norm_cross(x), k, v))
        return x + self.drop(self.ffn(self.norm_ffn(x)))


class CaptionerPreTrainedModel(transformers.PreTrainedModel):
    config_class = CaptionerConfig
    base_model_prefix = "captioner"
    main_input_name = "input_ids"
    _no_split_modules = ["_DecoderLayer"]

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)


class CaptionerForImageCaptioning(CaptionerPreTrainedModel, transformers.GenerationMixin):
    """The captioner (see the module docstring). ``forward`` returns ``CausalLMOutputWithPast``."""

    def __init__(self, config: CaptionerConfig):
        super().__init__(config)
        d = config.hidden_size
        self.image_norm = nn.LayerNorm(config.feature_dim)
        self.image_proj = nn.Linear(config.feature_dim, d)
        self.image_drop = nn.Dropout(config.dropout)
        self.embed_tokens = nn.Embedding(config.vocab_size, d, padding_idx=config.pad_token_id)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, d)
        self.layers = nn.ModuleList(_DecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.final_norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        self.post_init()
        self.generation_config = transformers.GenerationConfig(
            bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id,
            decoder_start_token_id=config.bos_token_id, max_new_tokens=24, length_penalty=0.0, num_beams=3,
            **self.caption_constraints())

    def caption_constraints(self) -> dict:
        """Generation settings that keep captions well-formed: never ``<pad>``, ``<bos>`` or ``<unk>`` (their
        logits are masked, the other tokens' log probabilities are not renormalised, so ``sequences_scores``
        stays the model's log P(s|I)), at least one word before ``<eos>``."""
        cfg = self.config
        suppress = sorted({cfg.pad_token_id, cfg.bos_token_id, getattr(cfg, "unk_token_id", 3)} - {cfg.eos_token_id})
        return {"suppress_tokens": suppress, "min_new_tokens": 1}

    # -- images ------------------------------------------------------------------------------------------------
    def regions(self, image_features):
        """``[batch, regions, feature_dim]`` from any accepted layout (see the module docstring)."""
        if image_features.dim() == 4:
            return image_features.flatten(2).transpose(1, 2)
        if image_features.dim() == 2:
            return image_features[:, None, :]
        if image_features.dim() == 3:
            return image_features
        raise ValueError(f"image_features must have 2, 3 or 4 dimensions, got shape {tuple(image_features.shape)}.")

    def encode_images(self, image_features):
        """The cross-attention keys and values of every layer: ``[batch, 2 * layers, regions + 1, hidden_size]``."""
        feats = self.regions(image_features.to(self.image_proj.weight.dtype))
        if feats.shape[-1] != self.config.feature_dim:
            raise ValueError(f"image features have {feats.shape[-1]} channels; this captioner reads "
                             f"{self.config.feature_dim} ({self.config.encoder}).")
        if not torch.isfinite(feats).all():
            raise ValueError("image_features hold NaN or infinite values.")
        feats = torch.cat([feats.mean(dim=1, keepdim=True), feats], dim=1)
        memory = self.image_drop(self.image_proj(self.image_norm(feats)))
        kv = [t for layer in self.layers for t in layer.cross_attn.keys_values(memory)]
        return torch.stack(kv, dim=1)

    # -- text --------------------------------------------------------------------------------------------------
    def forward(self, input_ids=None, image_features=None, image_embeds=None, attention_mask=None,
                cache=None, labels=None, use_cache=None, return_dict=True, num_items_in_batch=None,
                past_key_values=None, **kwargs):
        """Next-word logits ``[batch, tokens, vocab]``; ``loss`` (mean cross-entropy over non-pad ``labels``,
        which are the targets aligned with ``input_ids``, i.e. already shifted) when ``labels`` are given.

        Without ``input_ids``, they are built from ``labels`` (:func:`inputs_from_labels`), as encoder-decoder
        models build their decoder inputs. ``num_items_in_batch`` (passed by ``transformers.Trainer``): the loss
        is the summed cross-entropy divided by it, so that gradient accumulation weighs every token alike.

        ``cache`` (a ``transformers.DynamicCache``, updated in place) is what transformers >= 5.24 passes and
        returns; ``past_key_values`` is the same for earlier releases (whichever is given is used)."""
        past_key_values = cache if cache is not None else past_key_values
        if image_embeds is None:
            if image_features is None:
                raise ValueError("Pass image_features (or image_embeds from encode_images).")
            image_embeds = self.encode_images(image_features)
        if input_ids is None and labels is not None:
            input_ids = inputs_from_labels(labels, self.config.bos_token_id, self.config.pad_token_id)
        if input_ids is None:
            raise ValueError("Pass input_ids (start every caption with the <bos> id) or labels.")
        if image_embeds.shape[0] != input_ids.shape[0]:
            raise ValueError(f"{input_ids.shape[0]} token rows but {image_embeds.shape[0]} images.")
        if use_cache and past_key_values is None:
            past_key_values = transformers.DynamicCache()
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        t = input_ids.shape[1]
        if past + t > self.config.max_position_embeddings:
            raise ValueError(f"{past + t} tokens exceed max_position_embeddings={self.config.max_position_embeddings}.")
        positions = torch.arange(past, past + t, device=input_ids.device)
        x = self.embed_tokens(input_ids) * math.sqrt(self.config.hidden_size) + self.embed_positions(positions)[None]
        x = self.image_drop(x)
        key_padding = attention_mask if attention_mask is not None and not bool(attention_mask.all()) else None
        for i, layer in enumerate(self.layers):
            x = layer(x, image_embeds[:, 2 * i], image_embeds[:, 2 * i + 1], past_key_values, key_padding)
        logits = self.lm_head(self.final_norm(x))
        loss = None
        if labels is not None:
            if num_items_in_batch is None:
                loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)
            else:
                loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100,
                                       reduction="sum") / num_items_in_batch
        return transformers.modeling_outputs.CausalLMOutputWithPast(
            loss=loss, logits=logits, **{_CACHE_FIELD: past_key_values if use_cache else None})

    def generate(self, input_ids=None, image_features=None, image_embeds=None, **kwargs):
        """``transformers`` generation; the image keys/values are computed once (``image_embeds``)."""
        if input_ids is not None and kwargs.get("labels") is not None:
            raise ValueError("generate got input_ids together with labels: the captions would continue the "
                             "teacher-forcing inputs (the reference captions) instead of captioning the images. "
                             "With Seq2SeqTrainer, batch with CaptionerDataCollator (image_features and labels; "
                             "forward builds input_ids from labels).")
        if image_embeds is None:
            if image_features is None:
                raise ValueError("Pass image_features (or image_embeds from encode_images).")
            with torch.no_grad():
                image_embeds = self.encode_images(image_features.to(self.device))
        if input_ids is None:
            input_ids = torch.full((image_embeds.shape[0], 1), self.config.bos_token_id, dtype=torch.long,
                                   device=image_embeds.device)
        return super().generate(input_ids=input_ids, image_embeds=image_embeds, **kwargs)

    @torch.no_grad()
    def caption_log_probs(self, token_ids, image_features=None, image_embeds=None):
        """log P(s|I) (natural log, summed over every token after ``<bos>``, ``<eos>`` included) of each row.

        ``token_ids``: a list of id lists ``[<bos>, w_1, .., w_n, <eos>]`` (:func:`encode_captions`), one per
        image row.
        """
        if image_embeds is None:
            image_embeds = self.encode_images(image_features.to(self.device))
        if len(token_ids) != image_embeds.shape[0]:
            raise ValueError(f"{len(token_ids)} captions but {image_embeds.shape[0]} images.")
        inputs, targets = pad_batch(token_ids, self.config.pad_token_id)
        inputs, targets = inputs.to(self.device), targets.to(self.device)
        return sequence_log_probs(self(input_ids=inputs, image_embeds=image_embeds).logits, targets)

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return True


#: The field of ``CausalLMOutputWithPast`` that carries the key/value cache: ``cache`` since transformers 5.24
#: (which also renamed the keyword generate passes to ``forward``), ``past_key_values`` before.
_CACHE_FIELD = ("cache" if "cache" in transformers.modeling_outputs.CausalLMOutputWithPast.__dataclass_fields__
                else "past_key_values")


def sequence_log_probs(logits, targets):
    """Summed natural-log probability of each row's ``targets`` (-100 = padding, skipped) under ``logits``."""
    logp = logits.float().log_softmax(-1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return (logp * (targets >= 0)).sum(-1)


def inputs_from_labels(labels, bos_id: int, pad_id: int):
    """Teacher-forcing ``input_ids`` for aligned ``labels`` ``[batch, tokens]`` (``w_1 .. w_n <eos>``, -100 =
    padding): ``<bos> w_1 .. w_n``, the labels shifted right by one, ``pad_id`` wherever the label is padding (as
    :func:`pad_batch` makes them)."""
    inputs = torch.cat([torch.full_like(labels[:, :1], bos_id), labels[:, :-1]], dim=1)
    return inputs.masked_fill((inputs < 0) | (labels < 0), pad_id)


class CaptionerDataCollator:
    """Batches for ``transformers.Trainer`` and ``Seq2SeqTrainer``: ``image_features`` stacked (float32) and
    ``labels`` padded with -100. Other keys of the rows are left out.

    Each row: ``image_features`` (``[regions, feature_dim]``, ``[feature_dim, H, W]`` or ``[feature_dim]``, as a
    list, array or tensor; the same shape in every row) and, optionally, ``labels``: a caption's token ids after
    ``<bos>`` (``w_1 .. w_n <eos>``, :func:`capeval.models.caption_tokenizer.caption_labels`).

    There are no ``input_ids`` on purpose: ``forward`` builds them from ``labels``, and
    ``Seq2SeqTrainer(predict_with_generate=True)`` passes the batch to ``generate``, which then starts every
    caption at ``<bos>``.
    """

    def __call__(self, rows):
        if not rows:
            raise ValueError("No rows to batch.")
        batch = {"image_features": torch.stack([torch.as_tensor(r["image_features"], dtype=torch.float32)
                                                for r in rows])}
        has = [r.get("labels") is not None for r in rows]
        if any(has):
            if not all(has):
                raise ValueError("Some rows have labels and some do not.")
            ids = [torch.as_tensor(r["labels"], dtype=torch.long).flatten() for r in rows]
            if any(len(row) == 0 for row in ids):
                raise ValueError("A row has empty labels; each needs at least <eos>.")
            batch["labels"] = torch.nn.utils.rnn.pad_sequence(ids, batch_first=True, padding_value=-100)
        return batch


def pad_batch(token_ids, pad_id: int):
    """``(inputs, targets)`` for teacher forcing: inputs = ids[:-1] padded with ``pad_id``, targets = ids[1:]
    padded with -100 (ignored by the loss)."""
    if not token_ids:
        raise ValueError("No captions.")
    if any(len(ids) < 2 for ids in token_ids):
        raise ValueError("Every token list needs at least <bos> and <eos>.")
    width = max(len(ids) for ids in token_ids) - 1
    inputs = torch.full((len(token_ids), width), pad_id, dtype=torch.long)
    targets = torch.full((len(token_ids), width), -100, dtype=torch.long)
    for row, ids in enumerate(token_ids):
        ids = torch.as_tensor(ids, dtype=torch.long)
        inputs[row, :len(ids) - 1] = ids[:-1]
        targets[row, :len(ids) - 1] = ids[1:]
    return inputs, targets


transformers.AutoConfig.register(MODEL_TYPE, CaptionerConfig, exist_ok=True)
transformers.AutoModelForCausalLM.register(CaptionerConfig, CaptionerForImageCaptioning, exist_ok=True)
