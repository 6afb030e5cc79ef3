"""Caption corpora for training and evaluating the caption language models of MMI re-ranking.

* ``coco-train2014``: COCO train2014 captions (the copy inside pycocoevalcap's SPICE jar, the corpus of the
  SPICE-U uniqueness table) minus every image that any evaluation set here uses: COCO Karpathy test
  (``coco_karpathy_test/karpathy_ref.json``), the COMPOSITE COCO subset (``composite/composite_coco.jsonl``)
  and THumB (``thumb/mscoco_THumB-1.0.jsonl``), read from :func:`capeval.paths.data_dir`. Without the data
  directory or one of those files it refuses (``FileNotFoundError``) rather than train on everything.
* ``flickr8k-train`` / ``flickr8k-dev`` / ``flickr8k-test``: ``flickr8k/Flickr8k.token.txt`` captions of
  the images listed in ``Flickr_8k.{train,dev,test}Images.txt``.
* ``coco-karpathy-test``: the Karpathy test references (for perplexity).

COCO image ids are unique across train2014 and val2014, so exclusion is by numeric image id.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from capeval.paths import data_dir

EXCLUDED_SOURCES = ("coco_karpathy_test/karpathy_ref.json", "composite/composite_coco.jsonl",
                    "thumb/mscoco_THumB-1.0.jsonl")
CORPORA = ("coco-train2014", "flickr8k-train", "flickr8k-dev", "flickr8k-test", "coco-karpathy-test")
_COCO_ID = re.compile(r"(\d+)\.(?:jpg|npz)$")


def _root(root: str | Path | None) -> Path:
    path = Path(root) if root is not None else data_dir(required=True)
    if not path.is_dir():
        raise FileNotFoundError(f"Data directory {path} does not exist.")
    return path


def _coco_id(value: object, where: str) -> int:
    if isinstance(value, int):
        return value
    m = _COCO_ID.search(str(value))
    if not m:
        raise ValueError(f"{where}: cannot read a COCO image id from {value!r}.")
    return int(m.group(1))


def _json_rows(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def excluded_coco_image_ids(root: str | Path | None = None) -> dict[str, set[int]]:
    """``{source file: COCO image ids}`` of every evaluation set the LM must not see."""
    base = _root(root)
    out: dict[str, set[int]] = {}
    for rel in EXCLUDED_SOURCES:
        path = base / rel
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: cannot exclude its images from the LM training captions.")
        out[rel] = {_coco_id(row.get("image", row.get("image_id")), f"{path} row {n}")
                    for n, row in enumerate(_json_rows(path), 1)}
    return out


def coco_train_captions(root: str | Path | None = None, coco: dict[int, list[str]] | None = None) -> dict[int, list[str]]:
    """COCO train2014 ``{image_id: [captions]}`` minus every image of :func:`excluded_coco_image_ids`.

    ``coco`` replaces the captions read from the SPICE jar (for tests).
    """
    excluded = set().union(*excluded_coco_image_ids(root).values())
    if coco is None:
        from capeval.coco.captions import coco_captions

        coco = coco_captions("train2014")
    return {i: caps for i, caps in coco.items() if i not in excluded}


def flickr8k_captions(split: str, root: str | Path | None = None) -> dict[str, list[str]]:
    """Flickr8k ``{image file: [5 captions]}`` of ``split`` (train, dev or test)."""
    if split not in ("train", "dev", "test"):
        raise ValueError(f"Unknown Flickr8k split {split!r}; choose train, dev or test.")
    base = _root(root) / "flickr8k"
    images = {ln.strip() for ln in (base / f"Flickr_8k.{split}Images.txt").read_text(encoding="utf-8").splitlines()
              if ln.strip()}
    out: dict[str, list[str]] = {}
    for n, line in enumerate((base / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        key, _, caption = line.partition("\t")
        image = key.split("#")[0]
        if not caption:
            raise ValueError(f"{base / 'Flickr8k.token.txt'}:{n}: expected 'image#n<TAB>caption'.")
        if image in images:
            out.setdefault(image, []).append(caption.strip())
    return out


def coco_karpathy_test_captions(root: str | Path | None = None) -> dict[int, list[str]]:
    """COCO Karpathy test references ``{image_id: [captions]}``."""
    path = _root(root) / "coco_karpathy_test" / "karpathy_ref.json"
    out: dict[int, list[str]] = {}
    for n, row in enumerate(_json_rows(path), 1):
        out.setdefault(_coco_id(row["image_id"], f"{path} item {n}"), []).append(str(row["caption"]).strip())
    return out


def corpus_captions(name: str, root: str | Path | None = None) -> list[str]:
    """All captions of a named corpus (:data:`CORPORA`), flattened in a fixed order."""
    if name == "coco-train2014":
        groups = coco_train_captions(root)
    elif name.startswith("flickr8k-"):
        groups = flickr8k_captions(name.split("-", 1)[1], root)
    elif name == "coco-karpathy-test":
        groups = coco_karpathy_test_captions(root)
    else:
        raise ValueError(f"Unknown corpus {name!r}; choose one of {CORPORA} or give a file.")
    return [c for key in sorted(groups) for c in groups[key]]
