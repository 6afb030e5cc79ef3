"""Hub-ready folders of capeval's ``evaluate`` modules: ``capeval hub build-metric`` / ``build-space``.

A built folder is exactly what the Hub (and ``evaluate.load(folder)``) needs, nothing else:

* ``<folder name>.py``: the module script from ``metrics/<metric>/`` (``evaluate.load("user/<repo>")`` looks
  for ``<repo>.py``, so the script takes the folder's name);
* ``README.md``: the metric card, its YAML front matter with ``license`` and ``homepage`` filled, and a
  "Loading" section naming the Hub id and the local-folder form;
* ``requirements.txt``: ``capeval[extras]==<this version>`` (and gradio, pinned, for a Space): what the Hub
  installs;
* for a Space also ``app.py`` (the gradio Blocks app) and, where a metric names Debian packages in
  :data:`APT_PACKAGES`, ``packages.txt`` (none does: METEOR runs in Python, no Java).
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from capeval.advice import Setting, with_words, words
from capeval._version import __version__
from capeval.hub.cards import split_front_matter

__all__ = ["APT_PACKAGES", "EXTRAS", "GRADIO_VERSION", "BuiltFolder", "build_metric_folder", "loading_section",
           "metric_names", "metrics_source_dir", "plugin_metric_names", "requirements"]

#: The gradio release the Space apps are written and tested for (``requirements.txt`` and the card's ``sdk_version``).
GRADIO_VERSION = "6.31.0"
#: capeval extras each module needs beyond the base package.
EXTRAS = {"coco_caption": ("evaluate",), "spice": ("evaluate", "spice"), "spice_u": ("evaluate", "spice"),
          "thumb": ("evaluate",), "learned_critic": ("evaluate", "learned"), "lceval": ("evaluate", "lceval"),
          "sentence_cosine": ("evaluate", "learned"), "clip_score": ("evaluate", "learned"),
          "pac_score": ("evaluate", "learned"), "polos": ("evaluate", "learned"), "fleur": ("evaluate", "judges"),
          "capture": ("evaluate", "capture")}
#: Debian packages a Space needs (``packages.txt``), by metric. Empty: no module needs Java any more (METEOR 1.5
#: runs in Python by default; ``meteor_backend="java"`` and ``tokenizer="ptb-java"`` are for verification).
APT_PACKAGES: dict[str, tuple[str, ...]] = {}
LICENSE = "apache-2.0"
KINDS = ("metric", "space")
_SPACE_KEYS = ("sdk", "sdk_version", "app_file", "pinned")


@dataclass
class BuiltFolder:
    """What :func:`build_metric_folder` wrote."""

    folder: Path
    kind: str
    files: list[str]

    def summary(self) -> str:
        return f"{self.kind} folder {self.folder}: {', '.join(self.files)}"


def metrics_source_dir(source: str | Path | None = None) -> Path:
    """The repository's ``metrics/`` folder (or ``source``); ``FileNotFoundError`` naming the fix when absent."""
    path = Path(source) if source is not None else Path(__file__).resolve().parents[3] / "metrics"
    if not path.is_dir():
        raise with_words(FileNotFoundError, words("source", f"no metrics folder at {path}: pass ",
                                                  Setting(shown="PATH/TO/capeval/metrics"),
                                                  " (the evaluate module scripts ship with the source, not the wheel)."))
    return path


def metric_names(source: str | Path | None = None) -> list[str]:
    """The metric folders (``metrics/<name>/<name>.py``) in ``source``."""
    root = metrics_source_dir(source)
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file())


def requirements(metric: str, kind: str) -> list[str]:
    """The ``requirements.txt`` lines of a built folder: capeval pinned with its extras, gradio for a Space."""
    extras = ",".join(EXTRAS.get(metric, ("evaluate",)))
    lines = [f"capeval[{extras}]=={__version__}"]
    if kind == "space":
        lines.append(f"gradio=={GRADIO_VERSION}")
    return lines


def loading_section(metric: str, folder_name: str, hub_id: str | None) -> str:
    """The card section that names both ways of loading the module."""
    hub = hub_id or f"<user-or-org>/{folder_name}"
    return (
        "## Loading\n\n"
        "```python\n"
        "import evaluate\n\n"
        f"module = evaluate.load(\"{hub}\")  # from the Hugging Face Hub\n"
        f"module = evaluate.load(\"path/to/{folder_name}\")  # a local folder (offline): this folder, or\n"
        f"module = evaluate.load(\"metrics/{metric}\")  # capeval's source tree\n"
        "```\n\n"
        f"The folder holds `{folder_name}.py`, this card and `requirements.txt` (`pip install -r requirements.txt`); "
        f"`capeval hub build-space {metric}` / `build-metric {metric}` writes it.\n"
    )


def _card(text: str, source: Path, metric: str, folder_name: str, kind: str, hub_id: str | None,
          homepage: str) -> str:
    meta, body = split_front_matter(text, str(source))
    head = text[: len(text) - len(body)] if body and text.endswith(body) else None
    if head is None or not head.startswith("---"):
        raise ValueError(f"{source}: expected YAML front matter between '---' lines.")
    lines = head.rstrip("\n").split("\n")[1:-1]  # between the '---' lines, kept as written
    lines = [line for line in lines if not re.match(r"(license|homepage)\s*:", line)]
    if kind == "space":
        lines = [re.sub(r"^sdk_version\s*:.*$", f"sdk_version: {GRADIO_VERSION}", line) for line in lines]
    else:  # an evaluate module without a Space: no sdk keys
        keep, skipping = [], False
        for line in lines:
            key = re.match(r"(\w+)\s*:", line)
            if key:
                skipping = key.group(1) in _SPACE_KEYS
            if not skipping:
                keep.append(line)
        lines = keep
    lines += [f"license: {LICENSE}", f"homepage: {homepage}"]
    body = re.sub(r"evaluate\.load\(\"capeval/" + re.escape(metric) + r"\"\)", f"evaluate.load(\"{hub_id or folder_name}\")", body)
    section = loading_section(metric, folder_name, hub_id)
    if "## Loading" not in body:
        parts = body.split("\n## ", 1)
        body = parts[0].rstrip("\n") + "\n\n" + section + ("\n## " + parts[1] if len(parts) == 2 else "")
    return "---\n" + "\n".join(lines) + "\n---\n" + body


def _homepage(script_text: str, metric: str) -> str:
    urls = re.findall(r"(?:homepage=|codebase_urls=\[|reference_urls=\[)\s*\"([^\"]+)\"", script_text)
    if not urls:
        raise ValueError(f"metrics/{metric}/{metric}.py names no homepage, codebase_urls or reference_urls in its "
                         "MetricInfo; add one.")
    return urls[0]


def plugin_metric_names() -> list[str]:
    """The registered plug-in metrics (:mod:`capeval.plugins`), whose modules are generated from their classes."""
    from capeval.registry import REGISTRY

    return sorted(name for name, spec in REGISTRY.items() if spec.source)


def _check_target(out: Path, hub_id: str | None, overwrite: bool) -> str:
    """The folder's (and script's) name; ``ValueError`` / ``FileExistsError`` for a target that cannot be written."""
    if hub_id is not None and (hub_id.count("/") != 1 or not all(hub_id.split("/"))):
        raise ValueError(f"hub id must look like 'user-or-org/name', got {hub_id!r}.")
    name = hub_id.split("/")[1] if hub_id else out.name
    if name != out.name:
        raise ValueError(f"the folder name {out.name!r} must be the Hub repo name {name!r}: evaluate.load looks "
                         f"for {name}.py in the repo.")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.endswith(".py"):
        raise ValueError(f"folder name {name!r}: use letters, digits, '-', '_' or '.' (it names the script).")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise with_words(FileExistsError, words("overwrite", f"{out} is not empty; pass ", Setting(True),
                                                    " to replace it."))
    return name


def _source_files(metric: str, name: str, kind: str, hub_id: str | None,
                  source: str | Path | None) -> dict[str, str]:
    """The files of capeval's own module ``metrics/<metric>``."""
    from capeval.hub.card_options import card_families, has_options_block, refresh_card

    src = metrics_source_dir(source) / metric
    script = (src / f"{metric}.py").read_text(encoding="utf-8")
    card = (src / "README.md").read_text(encoding="utf-8")
    families = card_families(src / f"{metric}.py")
    if families and has_options_block(card):  # the option table as the declarations give it now
        card = refresh_card(card, families, str(src / "README.md"))
    files = {f"{name}.py": script,
             "README.md": _card(card, src / "README.md", metric, name, kind, hub_id, _homepage(script, metric)),
             "requirements.txt": "\n".join(requirements(metric, kind)) + "\n"}
    if kind == "space":
        files["app.py"] = (src / "app.py").read_text(encoding="utf-8")
        if metric in APT_PACKAGES:
            files["packages.txt"] = "\n".join(APT_PACKAGES[metric]) + "\n"
    return files


def _plugin_files(metric: str, name: str, kind: str, hub_id: str | None) -> dict[str, str]:
    """The files of the plug-in metric ``metric``, generated from its class (:mod:`capeval.hub.plugin_module`)."""
    from capeval.hub.plugin_module import plugin_files, plugin_module

    generated = plugin_files(metric, kind)
    script = generated.pop("script")
    card = _card(generated.pop("README.md"), Path(f"<{metric}'s generated card>"), metric, name, kind, hub_id,
                 _homepage(script, metric))
    lines = [*requirements(metric, kind)[:1], plugin_module(metric).distribution, *requirements(metric, kind)[1:]]
    return {f"{name}.py": script, "README.md": card, "requirements.txt": "\n".join(lines) + "\n", **generated}


def build_metric_folder(metric: str, out: str | Path, *, kind: str = "space", hub_id: str | None = None,
                        source: str | Path | None = None, overwrite: bool = False) -> BuiltFolder:
    """Write the Hub folder of ``metrics/<metric>`` to ``out`` (``kind``: ``"space"`` or ``"metric"``); for a plug-in
    metric (an entry point of ``capeval.metrics``) the module is generated from its class."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    plugins = plugin_metric_names()
    names = [] if metric in plugins else metric_names(source)
    if metric not in plugins and metric not in names:
        known = ", ".join(names + plugins)
        raise ValueError(f"unknown metric module {metric!r}; the metrics folder has: {known}.")
    out = Path(out)
    name = _check_target(out, hub_id, overwrite)
    files = (_plugin_files(metric, name, kind, hub_id) if metric in plugins
             else _source_files(metric, name, kind, hub_id, source))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    for filename, text in files.items():
        (out / filename).write_text(text, encoding="utf-8")
    return BuiltFolder(out, kind, sorted(files))
