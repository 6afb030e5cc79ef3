"""Upload a built dataset or evaluate-module folder to the Hugging Face Hub (``huggingface_hub``).

Errors are ``RuntimeError`` with a message saying what to do: no token, offline mode, Hub not
reachable, token rejected. Nothing is uploaded unless the folder looks like a built dataset
(``README.md`` with YAML front matter and at least one parquet file under ``data/``) or a built
evaluate-module folder (``<repo name>.py``, ``README.md``, ``requirements.txt``; uploaded as a gradio Space).
"""
from __future__ import annotations

import os
from pathlib import Path

from capeval.advice import Setting, with_words, words
from capeval.hub.cards import split_front_matter
from capeval.hub_cli import login_command

_TRUE = {"1", "true", "yes", "on"}


def check_dataset_folder(folder: str | Path) -> list[Path]:
    """The parquet files of a built dataset folder (``ValueError`` when it is not one)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a directory; build it with `capeval hub build-dataset`.")
    readme = folder / "README.md"
    if not readme.is_file():
        raise ValueError(f"{folder} has no README.md; build it with `capeval hub build-dataset`.")
    meta, _ = split_front_matter(readme.read_text(encoding="utf-8"), str(readme))
    if "configs" not in meta:
        raise ValueError(f"{readme}: the YAML front matter has no 'configs'; rebuild the folder.")
    files = sorted((folder / "data").rglob("*.parquet"))
    if not files:
        raise ValueError(f"{folder}/data holds no parquet file; rebuild the folder.")
    return files


def push_dataset(
    folder: str | Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = True,
    revision: str | None = None,
    commit_message: str | None = None,
    endpoint: str | None = None,
) -> str:
    """Create (if needed) the dataset repo ``repo_id`` and upload ``folder``; return the commit URL."""
    files = check_dataset_folder(folder)
    return _upload(folder, repo_id, "dataset", token=token, private=private, revision=revision, endpoint=endpoint,
                   commit_message=commit_message or f"Upload {len(files)} parquet file(s) and the dataset card (capeval)")


def check_module_folder(folder: str | Path, repo_id: str | None = None) -> str:
    """``"space"`` or ``"metric"`` for a folder built by ``capeval hub build-space`` / ``build-metric``.

    ``ValueError`` when a file the Hub needs is missing, or when the script is not named after ``repo_id``'s
    name (``evaluate.load("user/name")`` looks for ``name.py``).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a directory; build it with `capeval hub build-space METRIC`.")
    name = repo_id.split("/")[-1] if repo_id else folder.name
    for needed in (f"{name}.py", "README.md", "requirements.txt"):
        if not (folder / needed).is_file():
            raise ValueError(f"{folder} has no {needed} (the Hub repo {name!r} needs it); build the folder with "
                             "`capeval hub build-space METRIC --out DIR/NAME` (DIR/NAME named like the repo).")
    return "space" if (folder / "app.py").is_file() else "metric"


def push_module_folder(folder: str | Path, repo_id: str, *, token: str | None = None, private: bool = True,
                       revision: str | None = None, commit_message: str | None = None,
                       endpoint: str | None = None) -> str:
    """Upload a built evaluate-module folder as a gradio Space (an evaluate module on the Hub is a Space)."""
    kind = check_module_folder(folder, repo_id)
    return _upload(folder, repo_id, "space", token=token, private=private, revision=revision, endpoint=endpoint,
                   commit_message=commit_message or f"Upload the capeval evaluate {kind} folder")


def push_model_folder(folder: str | Path, repo_id: str, *, token: str | None = None, private: bool = True,
                      revision: str | None = None, commit_message: str | None = None,
                      endpoint: str | None = None) -> str:
    """Upload a folder built by ``capeval hub build-model`` as a model repo (its files checked against its manifest)."""
    from capeval.hub.model_folder import check_model_folder

    manifest = check_model_folder(folder)
    if repo_id.split("/")[-1] != manifest["name"]:
        raise ValueError(f"{folder} holds {manifest['name']!r}; push it to a repo of that name (capeval resolves "
                         f"{manifest['repo_id']!r}), not {repo_id!r}.")
    return _upload(folder, repo_id, "model", token=token, private=private, revision=revision, endpoint=endpoint,
                   commit_message=commit_message or f"Upload capeval model {manifest['name']}")


def _upload(folder, repo_id: str, repo_type: str, *, token, private, revision, commit_message, endpoint) -> str:
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if "/" not in repo_id or repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ValueError(f"repo_id must look like 'user-or-org/name', got {repo_id!r}.")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        raise RuntimeError("HF_HUB_OFFLINE is set: cannot push to the Hub offline. Unset it and retry when online.")
    token = token or get_token()
    if not token:
        raise with_words(RuntimeError, words("token", f"no Hugging Face token: run `{login_command()}`, set HF_TOKEN, "
                                             "or pass ", Setting(shown="TOKEN"), "."))
    api = HfApi(endpoint=endpoint, token=token)
    target = endpoint or "the Hugging Face Hub"
    extra = {"space_sdk": "gradio"} if repo_type == "space" else {}
    try:
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True, **extra)
        info = api.upload_folder(repo_id=repo_id, repo_type=repo_type, folder_path=str(folder), revision=revision,
                                 commit_message=commit_message)
    except OfflineModeIsEnabled:
        raise RuntimeError("huggingface_hub is in offline mode: cannot push. Unset HF_HUB_OFFLINE.") from None
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status in (401, 403):
            raise RuntimeError(f"the Hub rejected the token for {repo_id!r} (HTTP {status}): check it has write access.") from None
        raise RuntimeError(f"the Hub refused the upload to {repo_id!r}: {err}") from None
    except Exception as err:  # network layer: httpx/requests connection errors, timeouts, DNS
        if _is_network_error(err):
            raise RuntimeError(
                f"cannot reach {target} ({type(err).__name__}): no network? The folder {folder} is complete; "
                "push it again when online."
            ) from None
        raise
    return str(getattr(info, "commit_url", info))


def _is_network_error(err: BaseException) -> bool:
    names = {cls.__name__ for cls in type(err).__mro__}
    network = {"ConnectError", "ConnectTimeout", "TransportError", "NetworkError", "TimeoutException",
               "ConnectionError", "Timeout", "ProxyError"}
    return bool(names & network) or isinstance(err, OSError)
