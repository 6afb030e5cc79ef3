"""The command that fetches a Hub repo with huggingface_hub's ``hf`` command (for hints in error messages).

huggingface_hub 0.34 introduced ``hf`` (capeval requires it) and 1.0 removed the deprecated command it replaced:
every hint names ``hf download``. Without huggingface_hub, the hint installs it first.
"""
from __future__ import annotations

import importlib.metadata


def installed_cli() -> str | None:
    """``"hf"``, the download command of the installed huggingface_hub, or ``None`` when huggingface_hub is not
    installed."""
    try:
        importlib.metadata.distribution("huggingface_hub")
    except importlib.metadata.PackageNotFoundError:
        return None
    return "hf"


def download_command(repo: str, *, repo_type: str | None = None, local_dir: str | None = None) -> str:
    """The shell command that downloads Hub repo ``repo`` into the Hugging Face cache (or ``local_dir``):
    ``hf download capeval/critic-coco-ref``, prefixed by ``pip install huggingface_hub &&`` when it is missing."""
    cli = installed_cli()
    parts = ["hf", "download"]
    if repo_type and repo_type != "model":
        parts.append(f"--repo-type {repo_type}")
    parts.append(repo)
    if local_dir:
        parts.append(f"--local-dir {local_dir}")
    command = " ".join(parts)
    return command if cli else f"pip install huggingface_hub && {command}"


def login_command() -> str:
    """The shell command that stores a Hub token: ``hf auth login``."""
    return "hf auth login"
