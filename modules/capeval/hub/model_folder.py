"""Hub-ready model repo folders: ``capeval hub build-model NAME --out DIR``.

The folder holds what :func:`capeval.model_store.model_dir` resolves ``NAME`` to (its weights, configuration and
training logs, files copied byte for byte), its card as ``README.md`` (``hub_cards/models/<name>.md`` with the
catalog's provenance block regenerated, so card and code agree) and ``capeval-model.json``: the catalog name, status,
metric, the Hub repo id, and the sha256 of every file. ``capeval hub push DIR --repo-id capeval/NAME`` uploads it as a
model repo; once pushed, every machine resolves ``NAME`` through the Hugging Face cache.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from capeval.advice import Setting, with_words, words
from capeval.catalog import entry
from capeval.hub.model_provenance import BEGIN, END, block
from capeval.model_store import hub_repo_id, model_dir
from capeval.paths import hub_cards_dir

MANIFEST = "capeval-model.json"
FORMAT = "capeval-model"


@dataclass(frozen=True)
class BuiltModel:
    name: str
    repo_id: str
    folder: Path
    files: dict[str, str]  # relative path -> sha256

    def summary(self) -> str:
        size = sum((self.folder / f).stat().st_size for f in self.files) / 1e6
        return (f"wrote {self.folder}: {len(self.files)} model files ({size:.2f} MB), README.md, {MANIFEST}; "
                f"push with `capeval hub push {self.folder} --repo-id {self.repo_id}`")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def model_card(name: str, cards: Path | None = None) -> str:
    """The card of ``name``: its template with the provenance block regenerated from the catalog.

    ``FileNotFoundError`` when the template is missing; ``ValueError`` when it has no YAML front matter with a
    ``license:`` (the Hub shows neither otherwise)."""
    path = (Path(cards) if cards else hub_cards_dir("models")) / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"no card for {name!r} at {path}: write hub_cards/models/{name}.md first.")
    text = path.read_text(encoding="utf-8")
    front = re.match(r"\A---\n(.*?)\n---\n", text, flags=re.S)
    if front is None or not re.search(r"^license:\s*\S", front.group(1), flags=re.M):
        raise ValueError(f"{path}: the card needs YAML front matter with a license: line.")
    if BEGIN in text and END in text:
        return re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block(name), text, count=1, flags=re.S)
    return re.sub(r"^(# .*\n)", lambda m: m.group(1) + "\n" + block(name) + "\n", text, count=1, flags=re.M)


def build_model_folder(name: str, out: str | Path, *, overwrite: bool = False, source: str | Path | None = None,
                       cards: str | Path | None = None) -> BuiltModel:
    """Write the Hub repo folder of catalog model ``name`` into ``out`` (see the module docstring).

    ``source``: the model's folder (default: where :func:`~capeval.model_store.model_dir` finds it); ``out`` must be
    empty or absent unless ``overwrite``. ``ValueError`` for a pretrained part or a retired model."""
    model = entry(name)
    if model.location not in ("bundled", "hub"):
        raise ValueError(f"{model.name!r} is {model.location}: only capeval's own models (bundled or Hub) get a "
                         "Hub repo.")
    src = Path(source) if source is not None else model_dir(model.name)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise with_words(FileExistsError, words("overwrite", f"{out} is not empty; pass ", Setting(True),
                                                    " to replace it."))
        shutil.rmtree(out)
    card = model_card(model.name, Path(cards) if cards else None)
    files = sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and p.name not in ("README.md", MANIFEST))
    if not files:
        raise FileNotFoundError(f"{src} holds no files of {model.name!r}.")
    out.mkdir(parents=True, exist_ok=True)
    digests = {}
    for path in files:
        rel = path.relative_to(src).as_posix()
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        digests[rel] = _sha256(target)
    (out / "README.md").write_text(card, encoding="utf-8")
    repo_id = hub_repo_id(model.name)
    manifest = {"format": FORMAT, "version": 1, "name": model.name, "repo_id": repo_id, "metric": model.metric,
                "status": model.status, "files": digests}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return BuiltModel(model.name, repo_id, out, digests)


def check_model_folder(folder: str | Path) -> dict:
    """The manifest of a built model folder, after checking every file it lists is there with its sha256.

    ``ValueError`` naming the first file that is missing or differs."""
    folder = Path(folder)
    path = folder / MANIFEST
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a capeval model manifest.")
    if not (folder / "README.md").is_file():
        raise ValueError(f"{folder} has no README.md (the model card); rebuild it with `capeval hub build-model`.")
    for rel, digest in data["files"].items():
        file = folder / rel
        if not file.is_file() or _sha256(file) != digest:
            raise ValueError(f"{folder}: {rel} is missing or changed since `capeval hub build-model` wrote it.")
    return data


def is_model_folder(folder: str | Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()


__all__ = ["BuiltModel", "MANIFEST", "build_model_folder", "check_model_folder", "is_model_folder", "model_card"]
