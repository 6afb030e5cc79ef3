"""Whether a row can be measured here (``capeval verify``'s probe): the Python packages and the default weights of an
image-reading metric, never downloading (:func:`weights_skip`), and the benchmark files and images of a job
(:class:`Probe`); each answer is a :class:`~capeval.meta_evaluation.verify.records.Skip` saying what is missing and how
to get it, or ``None``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from capeval.meta_evaluation.verify.examples import example_dir, example_sets
from capeval.meta_evaluation.verify.messages import first_clause, one_line
from capeval.meta_evaluation.verify.metric_facts import clip_family, image_metrics, judges
from capeval.meta_evaluation.verify.reasons import RESIZED_IMAGE_DIRS
from capeval.meta_evaluation.verify.records import Job, Skip
from capeval.hub_cli import download_command


def weights_reason(key: str) -> str | None:
    """Why the default weights of vision-language metric ``key`` are not here (``None``: they are); never downloads.
    The text of :func:`weights_skip`."""
    skip = weights_skip(key)
    return None if skip is None else skip.text


def weights_skip(key: str) -> Skip | None:
    """Why the default weights of vision-language metric ``key`` are not here, as a :class:`Skip` of kind
    ``weights`` whose ``fix`` says how to get them (``None``: they are here); never downloads."""
    from capeval.vision_language.metric import DEFAULT_CLIP_MODEL, PAC_CHECKPOINT_NAME, default_pac_checkpoint

    if key == "polos":
        return _polos_weights_skip()
    if key in judges():
        for repo in judges()[key]:
            why = _hub_weights_skip(repo, "LLaVA-1.5-13B (llava-hf)" if "llava-hf" in repo else "EXPERT's LoRA")
            if why is not None:
                return why
        return None
    if clip_family().get(key) == "clip":
        missing = "CLIP ViT-B/32"
        try:
            import huggingface_hub

            huggingface_hub.snapshot_download(DEFAULT_CLIP_MODEL, local_files_only=True)
        except ImportError as err:
            return Skip("weights", f"{err}", missing, download_command(DEFAULT_CLIP_MODEL))
        except Exception:  # noqa: BLE001 - huggingface_hub raises several "not cached" errors
            return Skip("weights", f"weights not in the Hugging Face cache: {download_command(DEFAULT_CLIP_MODEL)}",
                        missing, download_command(DEFAULT_CLIP_MODEL))
        return None
    path = default_pac_checkpoint()
    if not path.is_file():
        return Skip("weights",
                    f"PAC-S weights not found at {path}: download {PAC_CHECKPOINT_NAME} (CLIP ViT-B/32) from the link "
                    "in aimagelab/pacscore's README and put it there",
                    f"PAC-S {PAC_CHECKPOINT_NAME}", f"save to {_short_path(path.parent)}/")
    return None


def _declared_weights_skip(key: str) -> Skip | None:
    """The skip a metric declares itself (:meth:`capeval.metric.CaptionMetric.missing_weights`) for result key
    ``key``, ``None`` when it declares none or its defaults are here."""
    from capeval.registry import metric_class, resolve

    try:
        (family,) = resolve([key])
        missing = metric_class(family).missing_weights()
    except (ValueError, ImportError, KeyError):
        return None
    return None if missing is None else Skip("weights", *missing)


def _hub_weights_skip(repo: str, missing: str) -> Skip | None:
    """Why Hub model ``repo`` is not in the Hugging Face cache (``None``: it is); never downloads."""
    command = download_command(repo)
    try:
        import huggingface_hub

        huggingface_hub.snapshot_download(repo, local_files_only=True)
    except ImportError as err:
        return Skip("weights", f"{err}", missing, command)
    except Exception:  # noqa: BLE001 - huggingface_hub raises several "not cached" errors
        return Skip("weights", f"weights not in the Hugging Face cache: {command}", missing, command)
    return None


def _short_path(path: Path) -> str:
    """``path`` with the home directory written ``~`` (for the summary's short lines)."""
    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except (ValueError, RuntimeError):
        return str(path)


def _polos_weights_skip() -> Skip | None:
    """Why the released Polos checkpoint or its text encoder's configuration is not here (``None``: both are)."""
    from capeval.vision_language.metric import polos_checkpoint_places, resolve_polos_model

    try:
        folder = resolve_polos_model(None)
    except FileNotFoundError as err:
        return Skip("weights", one_line(err), "Polos reprod.zip",
                    f"unzip reprod/'s files to {_short_path(polos_checkpoint_places()[0])}/")
    from capeval.vision_language.polos import DEFAULT_TEXT_MODEL, read_checkpoint

    try:
        text_model = read_checkpoint(folder).text_model
    except (OSError, ValueError) as err:
        return Skip("weights", one_line(err), "a readable Polos checkpoint")
    if Path(text_model).is_dir():
        return None
    command = download_command(text_model or DEFAULT_TEXT_MODEL)
    missing = f"Polos's text encoder ({text_model or DEFAULT_TEXT_MODEL})"
    try:
        import huggingface_hub

        huggingface_hub.snapshot_download(text_model, local_files_only=True)
    except ImportError as err:
        return Skip("weights", f"{err}", missing, command)
    except Exception:  # noqa: BLE001 - huggingface_hub raises several "not cached" errors
        return Skip("weights", "Polos's text encoder configuration and tokenizer are not in the Hugging Face cache: "
                    f"{command}", missing, command)
    return None


class Probe:
    """The real availability checks: :meth:`__call__` ``(job, key) -> Skip | None``, loading each benchmark once."""

    def __init__(self) -> None:
        self._loaded: dict[Job, Any] = {}
        self._data: dict[Job, Skip | None] = {}
        self._images: dict[Job, Skip | None] = {}

    def benchmark(self, job: Job):
        """The job's :class:`Benchmark` (or the exception loading it raised)."""
        if job not in self._loaded:
            from capeval.judgments import load_benchmark

            kwargs = dict(job.settings)
            if "refs" in kwargs:
                kwargs["references"] = kwargs.pop("refs")
            try:
                self._loaded[job] = load_benchmark(job.name, **kwargs)
            except (FileNotFoundError, OSError, ValueError, ImportError) as err:
                self._loaded[job] = err
        return self._loaded[job]

    def data(self, job: Job) -> Skip | None:
        """Why the job's files are not here (``None``: they are)."""
        if job not in self._data:
            self._data[job] = self._data_skip(job)
        return self._data[job]

    def images(self, job: Job) -> Skip | None:
        """Why the job's images are not all here as the papers scored them (``None``: they are)."""
        if job not in self._images:
            self._images[job] = self._images_skip(job)
        return self._images[job]

    def _data_skip(self, job: Job) -> Skip | None:
        if job.kind == "bench":
            got = self.benchmark(job)
            if not isinstance(got, Exception):
                return None
            if isinstance(got, ImportError):
                return Skip("other", one_line(got), f"a Python package for {job.name}")
            return Skip("data", f"benchmark data not found: {one_line(got)}", f"{job.name} files",
                        first_clause(got))
        if job.kind == "thumb-rubric":
            from capeval.paths import data_dir

            root = data_dir()
            path = None if root is None else root / "thumb" / "mscoco_THumB-1.0.jsonl"
            if path is not None and path.is_file():
                return None
            return Skip("data", f"benchmark data not found: {path or 'no data directory'} (THumB 1.0's "
                        "mscoco_THumB-1.0.jsonl)", "thumb files",
                        f"{path} not found" if path else "set CAPEVAL_DATA_DIR")
        try:
            example_sets(job.name, with_images=False)
        except (FileNotFoundError, OSError, ValueError, KeyError, ImportError) as err:
            return Skip("data", f"example data not found: {one_line(err)}", f"{job.name} files", first_clause(err))
        return None

    def _images_skip(self, job: Job) -> Skip | None:
        if job.kind == "example":
            missing = [i for sets in example_sets(job.name, True).values() for i, p in enumerate(sets[2]) if p is None]
            if missing:
                total = sum(len(s[0]) for s in example_sets(job.name, False).values())
                where = f"{example_dir(job.name).name}/images or coco_val2014_images"
                return Skip("data", f"{len(missing)} of {total} images of {job.name} are not under the data directory "
                            f"({where})", f"{job.name} images", f"put them in {where} under the data directory")
            return None
        bench = self.benchmark(job)
        images = bench.images()
        if images is None:
            missing = bench.missing_images()
            return Skip("data", f"{len(missing)} image(s) of {bench.name} are not under the data directory (e.g. "
                        f"{missing[0]!r})", f"{bench.name} images", f"{len(missing)} missing, e.g. {missing[0]}")
        resized = next((p for p in images
                        if isinstance(p, str) and any(d in Path(p).parts for d in RESIZED_IMAGE_DIRS)), None)
        if resized is not None:
            return Skip("data", f"only re-encoded copies of {bench.name}'s images are here ({Path(resized).parent}), "
                        "not the original images the published numbers were measured on: put the originals in "
                        "flickr8k/Flicker8k_Dataset/ under the data directory", f"{bench.name} original images",
                        "put them in flickr8k/Flicker8k_Dataset/ (only 224 × 224 copies are here)")
        return None

    def __call__(self, job: Job, key: str) -> Skip | None:
        declared = _declared_weights_skip(key)
        if declared is not None:
            return declared
        if key in image_metrics():
            from capeval.registry import metric_class

            try:
                metric_class(key).check_available()
            except ImportError as err:
                from capeval.dependencies import INSTALL_HINT

                return Skip("other", one_line(err), f"Python packages for {key}", INSTALL_HINT)
            why = weights_skip(key)
            if why:
                return why
        why = self.data(job)
        if why or key not in image_metrics():
            return why
        return self.images(job)

