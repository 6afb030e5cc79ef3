"""Locating a Java runtime, with an error that names the fix."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

INSTALL_HINT = (
    "Install a Java runtime (8 or newer): `apt-get install default-jre-headless` on Debian/Ubuntu, "
    "`brew install openjdk` on macOS, or set JAVA_HOME to an existing JDK/JRE."
)


class JavaNotFoundError(RuntimeError):
    """No ``java`` executable on PATH or under ``$JAVA_HOME``."""


def java_executable(purpose: str = "this feature") -> str:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    exe = shutil.which("java")
    if exe is None:
        raise JavaNotFoundError(f"Java is required for {purpose} but was not found. {INSTALL_HINT}")
    return exe
