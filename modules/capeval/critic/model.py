"""The critic (Cui et al. CVPR 2018): P(candidate caption is human-written | image and/or a reference caption).

>>> from capeval.critic.model import CriticModel
>>> critic = CriticModel.from_pretrained(folder)                    # a transformers PreTrainedModel (safetensors)
>>> probs = critic.human_probability(cand_ids, cand_len, ref_ids, ref_len, image_features)   # [n] in [0, 1]

Architecture (sizes in :class:`CriticConfig`; the paper's §3 and its reference code):

* words -> embeddings (``embed_dim``; initialised from GloVe, trainable; unknown words start from GloVe's ``unk``)
  -> dropout -> one LSTM (``hidden_size`` 512, forget-gate bias 1.0) **shared** by the reference and the candidate;
  a caption's vector is the LSTM output at its ``<eos>`` (the last real token for captions of ``max_tokens`` tokens
  or more: the reference code's all-zero vector there is a defect not copied) -> dropout;
* the image's pooled CNN feature (``image_dim``; EfficientNet-Lite0 1280-d offline, the paper's ResNet-152 2048-d
  where available) -> a linear projection to ``hidden_size`` (no activation);
* ``context``: ``"image+reference"`` (default), ``"reference"`` (no image needed) or ``"image"`` (no reference);
* ``head``: ``"mlp"`` (default: concat [image ‖ reference ‖ candidate] -> 512 ReLU -> dropout 0.5 -> 2),
  ``"linear"`` (concat -> 2) or ``"bilinear"`` (compact bilinear pooling, 8,192-d, of [image ‖ reference] with the
  candidate -> 2). Logit 1 is "human", logit 0 "machine"; the score is the softmax probability of "human".
* ``interactions=True`` (capeval's addition, used by the shipped critics): the mlp / linear head also reads the
  element-wise products image ⊙ candidate and reference ⊙ candidate. On Flickr8k's 6,000 training images the
  paper's plain concatenation (and the bilinear head) stayed at chance on caption-image relevance (RC negatives:
  dev loss ln 2 after 3 epochs), the products let it learn; ``interactions=False`` is the paper's architecture.
* ``image_optional=True`` (capeval's addition): an image-reading critic with a learned "no image" context vector,
  used in place of the projected image for examples without one (``image_mask`` False). It lets one critic train on
  Flickr8k's images *and* on COCO's captions, whose images capeval does not have (``capeval critic train
  --text-corpus coco-train2014``); a critic scores with the image whenever it is given.
"""
from __future__ import annotations

from capeval.critic.bilinear import CompactBilinearPooling
from capeval.dependencies import require

torch, transformers = require("torch", "transformers", what="the critic")
nn = torch.nn

MODEL_TYPE = "capeval-critic"
CONTEXTS = ("image+reference", "reference", "image")
HEADS = ("mlp", "linear", "bilinear")


class CriticConfig(transformers.PretrainedConfig):
    """Sizes and variants of the critic.

    ``vocab_size`` (words incl. the 4 specials), ``embed_dim`` (50 for GloVe 6B 50-d offline, 300 as in the paper),
    ``hidden_size`` (512), ``image_dim`` (1280 for EfficientNet-Lite0), ``context``, ``head`` (see the module
    docstring), ``mlp_size`` (512), ``bilinear_dim`` (8,192), ``dropout`` (0.5), ``max_tokens`` (15 tokens per caption),
    ``word_vectors`` (where the embeddings started from), ``encoder`` / ``encoder_resolution`` (the capeval image
    encoder whose pooled features the critic reads), ``seed`` (count-sketch hashes), ``image_optional`` (a learned
    "no image" vector stands in for missing images; image contexts only).
    """

    model_type = MODEL_TYPE

    def __init__(self, vocab_size: int = 8, embed_dim: int = 50, hidden_size: int = 512, image_dim: int = 1280,
                 context: str = "image+reference", head: str = "mlp", mlp_size: int = 512, bilinear_dim: int = 8192,
                 dropout: float = 0.5, max_tokens: int = 15, word_vectors: str = "glove-6b-50d",
                 encoder: str = "efficientnet-lite0", encoder_resolution: int | str = 224, seed: int = 0,
                 interactions: bool = False, image_optional: bool = False, pad_token_id: int = 0, **kwargs):
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {CONTEXTS}, got {context!r}.")
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}.")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}.")
        self.vocab_size, self.embed_dim, self.hidden_size, self.image_dim = vocab_size, embed_dim, hidden_size, image_dim
        self.context, self.head, self.mlp_size, self.bilinear_dim = context, head, mlp_size, bilinear_dim
        self.dropout, self.max_tokens, self.word_vectors = dropout, max_tokens, word_vectors
        self.encoder, self.encoder_resolution, self.seed = encoder, encoder_resolution, seed
        self.interactions = bool(interactions)
        if self.interactions and head == "bilinear":
            raise ValueError("interactions apply to the mlp and linear heads (bilinear pooling has its own).")
        self.image_optional = bool(image_optional)
        if self.image_optional and "image" not in context:
            raise ValueError(f"image_optional needs an image context, not {context!r}.")
        super().__init__(pad_token_id=pad_token_id, **kwargs)

    @property
    def uses_image(self) -> bool:
        return "image" in self.context

    @property
    def uses_reference(self) -> bool:
        return "reference" in self.context


class CriticModel(transformers.PreTrainedModel):
    """The critic (see the module docstring); ``forward`` returns ``SequenceClassifierOutput`` (2 logits)."""

    config_class = CriticConfig
    base_model_prefix = "critic"
    main_input_name = "candidate_ids"

    def __init__(self, config: CriticConfig):
        super().__init__(config)
        h = config.hidden_size
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim, padding_idx=config.pad_token_id)
        self.lstm = nn.LSTM(config.embed_dim, h, batch_first=True)
        self.drop = nn.Dropout(config.dropout)
        self.image_proj = nn.Linear(config.image_dim, h) if config.uses_image else None
        self.no_image = nn.Parameter(torch.zeros(h)) if config.image_optional else None
        n_context = int(config.uses_image) + int(config.uses_reference)
        n_inputs = (2 * n_context + 1) if config.interactions else (n_context + 1)
        if config.head == "bilinear":
            self.pool = CompactBilinearPooling(n_context * h, h, config.bilinear_dim, seed=config.seed)
            self.classifier = nn.Linear(config.bilinear_dim, 2)
        elif config.head == "mlp":
            self.classifier = nn.Sequential(nn.Linear(n_inputs * h, config.mlp_size), nn.ReLU(),
                                            nn.Dropout(config.dropout), nn.Linear(config.mlp_size, 2))
        else:
            self.classifier = nn.Linear(n_inputs * h, 2)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, nn.LSTM):
            for name, p in module.named_parameters():
                if "weight" in name:
                    nn.init.xavier_uniform_(p)
                else:  # b_ih and b_hh: gates i, f, g, o; forget bias 1.0 in total
                    nn.init.zeros_(p)
                    if name.startswith("bias_ih"):
                        p.data[module.hidden_size: 2 * module.hidden_size] = 1.0
        elif isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.1)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx] = 0

    def set_word_vectors(self, vectors) -> None:
        """Copy ``vectors`` ([vocab_size, embed_dim], e.g. GloVe rows in vocabulary order) into the embeddings."""
        vectors = torch.as_tensor(vectors, dtype=self.embed.weight.dtype)
        if tuple(vectors.shape) != tuple(self.embed.weight.shape):
            raise ValueError(f"word vectors of shape {tuple(vectors.shape)}, expected {tuple(self.embed.weight.shape)}.")
        with torch.no_grad():
            self.embed.weight.copy_(vectors)
            self.embed.weight[self.config.pad_token_id] = 0

    def encode_captions(self, ids, lengths, extra_embeddings=None):
        """``[n, hidden_size]``: the LSTM output at position ``length - 1`` of each caption (see the module docstring).
        ``extra_embeddings`` (``[k, embed_dim]``): rows for ids ``vocab_size`` .. ``vocab_size + k - 1`` (words mapped
        into the embedding space, :mod:`capeval.critic.expansion`)."""
        if ids.shape[0] == 0:
            return ids.new_zeros((0, self.config.hidden_size), dtype=self.embed.weight.dtype)
        lengths = lengths.clamp(min=1, max=ids.shape[1])
        if extra_embeddings is not None and len(extra_embeddings):
            table = torch.cat([self.embed.weight, extra_embeddings.to(self.embed.weight)])
            embedded = nn.functional.embedding(ids, table, padding_idx=self.embed.padding_idx)
        else:
            embedded = self.embed(ids)
        out, _ = self.lstm(self.drop(embedded))
        last = out[torch.arange(ids.shape[0], device=ids.device), lengths - 1]
        return self.drop(last)

    def allow_missing_images(self) -> None:
        """Turn an image-reading critic into an ``image_optional`` one (a new, zero "no image" vector; the trained
        weights unchanged), e.g. before fine-tuning it on a corpus without images. No-op when it already is."""
        if self.no_image is not None:
            return
        if self.image_proj is None:
            raise ValueError(f"this critic's context is {self.config.context!r}: it reads no image.")
        p = self.image_proj.weight
        self.no_image = nn.Parameter(torch.zeros(self.config.hidden_size, dtype=p.dtype, device=p.device))
        self.config.image_optional = True

    def missing_image_vectors(self, n: int):
        """``[n, hidden_size]``: the learned "no image" context vector, once per example (``image_optional`` only)."""
        if self.no_image is None:
            raise ValueError("this critic needs every image (image_optional is off): image_mask must be None.")
        return self.no_image[None].expand(n, -1)

    def project_images(self, image_features, image_mask=None):
        """``[n, hidden_size]`` image context vectors; rows where ``image_mask`` ([n] bool) is False take the
        learned "no image" vector (``image_optional`` critics only; their features there are ignored)."""
        if self.image_proj is None:
            raise ValueError(f"this critic's context is {self.config.context!r}: it reads no image.")
        if image_features.dim() != 2 or image_features.shape[1] != self.config.image_dim:
            raise ValueError(f"image features must be [n, {self.config.image_dim}], got {tuple(image_features.shape)}.")
        projected = self.image_proj(image_features)
        if image_mask is None:
            return projected
        missing = self.missing_image_vectors(projected.shape[0]).to(projected.dtype)
        image_mask = torch.as_tensor(image_mask, dtype=torch.bool, device=projected.device)
        if tuple(image_mask.shape) != (projected.shape[0],):
            raise ValueError(f"image_mask must be [{projected.shape[0]}], got {tuple(image_mask.shape)}.")
        return torch.where(image_mask[:, None], projected, missing)

    def classify(self, candidate, reference=None, image=None):
        """Logits ``[n, 2]`` from sentence vectors (``candidate``, ``reference``) and projected ``image`` vectors."""
        context = []
        if self.config.uses_image:
            if image is None:
                raise ValueError(f"this critic's context is {self.config.context!r}: image features are required.")
            context.append(image)
        if self.config.uses_reference:
            if reference is None:
                raise ValueError(f"this critic's context is {self.config.context!r}: a reference is required.")
            context.append(reference)
        if self.config.head == "bilinear":
            return self.classifier(self.pool(torch.cat(context, dim=1), candidate))
        products = [c * candidate for c in context] if self.config.interactions else []
        return self.classifier(torch.cat([*context, candidate, *products], dim=1))

    def forward(self, candidate_ids, candidate_lengths, reference_ids=None, reference_lengths=None,
                image_features=None, labels=None, candidate_index=None, reference_index=None, image_mask=None,
                **kwargs):
        """Logits (and the loss with ``labels``). With ``candidate_index`` / ``reference_index`` ([n] longs),
        ``candidate_ids`` holds each distinct caption once and the two indexes pick the candidate's and the
        reference's rows (training encodes a context shared by a positive and a negative once). ``image_mask``
        ([n] bool, ``image_optional`` critics): False where an example has no image."""
        if candidate_index is not None:
            vectors = self.encode_captions(candidate_ids, candidate_lengths)
            cand = vectors[candidate_index]
            ref = vectors[reference_index] if self.config.uses_reference else None
        else:
            cand = self.encode_captions(candidate_ids, candidate_lengths)
            ref = self.encode_captions(reference_ids, reference_lengths) if self.config.uses_reference else None
        img = self.project_images(image_features, image_mask) if self.config.uses_image else None
        logits = self.classify(cand, ref, img)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return transformers.modeling_outputs.SequenceClassifierOutput(loss=loss, logits=logits)

    def human_probability(self, candidate_ids, candidate_lengths, reference_ids=None, reference_lengths=None,
                          image_features=None, image_mask=None):
        """``[n]``: P(human | context), in [0, 1] (``image_mask``: see :meth:`forward`)."""
        logits = self.forward(candidate_ids, candidate_lengths, reference_ids, reference_lengths, image_features,
                              image_mask=image_mask).logits
        return torch.softmax(logits.float(), dim=-1)[:, 1]


transformers.AutoConfig.register(MODEL_TYPE, CriticConfig, exist_ok=True)
transformers.AutoModelForSequenceClassification.register(CriticConfig, CriticModel, exist_ok=True)
