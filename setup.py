"""Build hook: ship the repository's ``hub_cards/`` inside the package as ``capeval/hub_cards``.

The cards live at the repository root (where Hub maintainers look for them); a wheel carries a copy
so that ``capeval hub build-dataset`` finds them when capeval is installed rather than checked out
(:func:`capeval.paths.hub_cards_dir`). All other metadata is in ``setup.cfg``.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HUB_CARDS = Path(__file__).resolve().parent / "hub_cards"


class BuildPyWithHubCards(build_py):
    def run(self):
        super().run()
        if HUB_CARDS.is_dir() and not getattr(self, "editable_mode", False):
            shutil.copytree(HUB_CARDS, Path(self.build_lib) / "capeval" / "hub_cards", dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithHubCards})
