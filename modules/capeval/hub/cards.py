"""Dataset cards: a template from ``hub_cards/datasets/<name>.md`` plus computed metadata.

Templates are found by :func:`capeval.paths.hub_cards_dir` (inside an installed wheel, or the checkout).

A template is a markdown file with YAML front matter holding the static metadata (pretty name,
license, task categories, tags, source datasets) and a body with ``$placeholders``
(:class:`string.Template`):

* ``$counts_table``: rows per config/split and how many carry an image;
* ``$features_table``: every column with its type;
* ``$build_note``: the command and capeval version that built the folder, partial/ text-only notes;
* ``$configs_usage``: ``load_dataset`` lines for each config.

The computed keys ``configs``, ``dataset_info`` and ``size_categories`` are added to the YAML.
"""
from __future__ import annotations

from pathlib import Path
from string import Template
from typing import Any

import yaml

from capeval.advice import Setting, with_words, words
from capeval._version import __version__
from capeval.paths import hub_cards_dir


def cards_directory(cards_dir: str | Path | None = None) -> Path:
    """The folder of card templates (``FileNotFoundError`` naming the fix when absent)."""
    path = Path(cards_dir) if cards_dir is not None else hub_cards_dir("datasets")
    if not path.is_dir():
        raise with_words(FileNotFoundError, words(
            "cards_dir", f"dataset card templates not found at {path}; pass ", Setting(shown="DIR"),
            " (the repository's hub_cards/datasets folder)."))
    return path


def split_front_matter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """``(yaml dict, body)`` of a markdown file that starts with ``---`` front matter."""
    if not text.startswith("---\n"):
        raise ValueError(f"{where}: a card template must start with YAML front matter ('---').")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError(f"{where}: the YAML front matter is not closed by '---'.")
    meta = yaml.safe_load(text[4:end]) or {}
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: the front matter must be a YAML mapping.")
    return meta, text[end + 5:]


def size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < bound:
            return label
    return "n>1M"


def render_card(name: str, written: list, out: Path, *, images: bool, limit: int | None,
                cards_dir: str | Path | None = None) -> str:
    """Render the README.md of a built dataset; ``written`` = ``[(SplitTable, parquet path, bytes)]``."""
    template_path = cards_directory(cards_dir) / f"{name}.md"
    if not template_path.is_file():
        raise FileNotFoundError(f"{template_path} not found; expected the dataset card template for {name!r}.")
    meta, body = split_front_matter(template_path.read_text(encoding="utf-8"), str(template_path))

    configs: dict[str, list] = {}
    for table, path, n_bytes in written:
        configs.setdefault(table.config, []).append((table, path, n_bytes))
    meta["configs"] = [
        {"config_name": config, **({"default": True} if i == 0 else {}),
         "data_files": [{"split": t.split, "path": str(p.relative_to(out).as_posix()).replace("-00000-of-00001", "-*")}
                        for t, p, _ in entries]}
        for i, (config, entries) in enumerate(configs.items())
    ]
    meta["dataset_info"] = [
        {"config_name": config, "features": entries[0][0].features._to_yaml_list(),
         "splits": [{"name": t.split, "num_bytes": int(b), "num_examples": t.num_rows} for t, _, b in entries],
         "download_size": int(sum(b for *_, b in entries)), "dataset_size": int(sum(b for *_, b in entries))}
        for config, entries in configs.items()
    ]
    meta["size_categories"] = [size_category(max(t.num_rows for t, _, _ in written))]

    counts = ["| config | split | rows | rows with image |", "|---|---|---|---|"]
    for t, _, _ in written:
        with_image = sum(p is not None for p in t.image_paths) if images else 0
        counts.append(f"| {t.config} | {t.split} | {t.num_rows:,} | {with_image:,} |")
    feats = ["| column | type |", "|---|---|"]
    first = written[0][0].features
    for config, entries in configs.items():
        for col, feat in entries[0][0].features.items():
            if config != written[0][0].config and col in first:
                continue
            feats.append(f"| `{col}` | {_describe_feature(feat)} |")
    build = [f"Built with capeval {__version__}: `capeval hub build-dataset {name} --source DATA_DIR --out DIR"
             f"{'' if images else ' --no-images'}{f' --limit {limit}' if limit else ''}`."]
    if not images:
        build.append("This is a **text-only build**: the `image` column was left out.")
    if limit:
        build.append(f"**Partial build**: only the first {limit} rows of each split are included.")
    usage = "\n".join(f'load_dataset("REPO_ID", "{c}")' for c in configs)
    values = {"counts_table": "\n".join(counts), "features_table": "\n".join(feats),
              "build_note": " ".join(build), "configs_usage": usage}
    try:
        rendered = Template(body).substitute(values)
    except (KeyError, ValueError) as err:
        raise ValueError(f"{template_path}: bad placeholder {err}; available: {sorted(values)}.") from None
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n{rendered}"


def _describe_feature(feature: Any) -> str:
    from datasets import ClassLabel, Image, List, Value

    if isinstance(feature, Image):
        return "image"
    if isinstance(feature, ClassLabel):
        return "class label: " + ", ".join(f"{i} = {n}" for i, n in enumerate(feature.names))
    if isinstance(feature, List):
        return f"list of {_describe_feature(feature.feature)}"
    if isinstance(feature, Value):
        return feature.dtype
    return type(feature).__name__
