"""Moved to :mod:`capeval.dependencies` (public); kept so that older imports keep working."""
from capeval.dependencies import INSTALL_HINT, default_device, release_freed_memory, require

__all__ = ["INSTALL_HINT", "default_device", "release_freed_memory", "require"]
