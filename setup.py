"""Build hooks: ship the repository's ``hub_cards/`` inside the package as ``capeval/hub_cards``, and compile METEOR's
aligner.

The cards live at the repository root (where Hub maintainers look for them); a wheel carries a copy
so that ``capeval hub build-dataset`` finds them when capeval is installed rather than checked out
(:func:`capeval.paths.hub_cards_dir`).

METEOR's aligner (``modules/capeval/meteor/align.py``) is compiled with Cython as it is, into
``capeval.meteor._align_compiled``, stamped with the source's SHA-256 (:mod:`capeval.meteor.compiled` uses it only
while that stamp matches ``align.py``). The extension is optional: without a C compiler the install goes on and METEOR
runs the Python aligner, with the same statistics; so does a build without isolation and without Cython. All other
metadata is in ``setup.cfg``.
"""
import hashlib
import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
HUB_CARDS = ROOT / "hub_cards"
ALIGN_SOURCE = Path("modules") / "capeval" / "meteor" / "align.py"
#: Where the stamped copy of align.py and Cython's C file go (ignored by git).
CYTHON_BUILD = Path("build") / "cython"


def compiled_aligner() -> list:
    """The optional extension ``capeval.meteor._align_compiled``: ``align.py`` with its digest appended, cythonized;
    none when Cython is not installed (a build without isolation: ``pyproject.toml`` asks for it otherwise)."""
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("capeval: Cython is not installed: METEOR's aligner stays Python (the same statistics, slower)")
        return []

    source = (ROOT / ALIGN_SOURCE).read_bytes()
    stamped = ROOT / CYTHON_BUILD / "capeval" / "meteor" / "_align_compiled.py"
    stamped.parent.mkdir(parents=True, exist_ok=True)
    text = source + f"\n\nSOURCE_DIGEST = {hashlib.sha256(source).hexdigest()!r}\n".encode()
    if not stamped.exists() or stamped.read_bytes() != text:
        stamped.write_bytes(text)
    extension = Extension("capeval.meteor._align_compiled", [str(stamped.relative_to(ROOT))], optional=True)
    return cythonize([extension], compiler_directives={"language_level": 3, "annotation_typing": False},
                     build_dir=str(CYTHON_BUILD / "c"), quiet=True)


class BuildPyWithHubCards(build_py):
    def run(self):
        super().run()
        if HUB_CARDS.is_dir() and not getattr(self, "editable_mode", False):
            shutil.copytree(HUB_CARDS, Path(self.build_lib) / "capeval" / "hub_cards", dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithHubCards}, ext_modules=compiled_aligner())
