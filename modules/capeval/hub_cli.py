"""The command that fetches a Hub repo with the huggingface_hub that is installed (for hints in error messages).

huggingface_hub 0.34 introduced the ``hf`` command and 1.0 removed ``huggingface-cli``: a hint must name the one the
user has. Without huggingface_hub, the hint installs it first.
"""
from __future__ import annotations

import importlib.metadata


def installed_cli() -> str | None:
    """``"hf"`` or ``"huggingface-cli"``: the download command the installed huggingface_hub provides (``hf`` when it
    provides both), or ``None`` when huggingface_hub is not installed."""
    try:
        dist = importlib.metadata.distribution("huggingface_hub")
    except importlib.metadata.PackageNotFoundError:
        return None
    scripts = {e.name for e in dist.entry_points if e.group == "console_scripts"}
    if "hf" in scripts or "huggingface-cli" not in scripts:
        return "hf"
    return "huggingface-cli"


def download_command(repo: str, *, repo_type: str | None = None, local_dir: str | None = None) -> str:
    """The shell command that downloads Hub repo ``repo`` into the Hugging Face cache (or ``local_dir``):
    ``hf download capeval/critic-coco-ref``, prefixed by ``pip install huggingface_hub &&`` when it is missing."""
    cli = installed_cli()
    parts = [cli or "hf", "download"]
    if repo_type and repo_type != "model":
        parts.append(f"--repo-type {repo_type}")
    parts.append(repo)
    if local_dir:
        parts.append(f"--local-dir {local_dir}")
    command = " ".join(parts)
    return command if cli else f"pip install huggingface_hub && {command}"


def login_command() -> str:
    """The shell command that stores a Hub token with the installed huggingface_hub."""
    cli = installed_cli()
    return "huggingface-cli login" if cli == "huggingface-cli" else "hf auth login"
