"""MkDocs hooks of capeval's site (mkdocs.yml ``hooks:``): pages generated at build time, so that none goes stale.

* ``cli.md`` and ``cli/<command>.md``: every ``capeval`` command's ``--help``, rendered from
  :func:`capeval.cli.build_parser` (100 columns); a link to ``cli.md#capeval-X`` goes to the page of ``X``.
* ``which-metric.md``: README.md's "Which metric should I report?" section; ``results.md``, ``results/defaults.md``
  and ``results/topics.md``: BENCHMARKS.md, split by its ``##`` sections (:data:`RESULTS_PAGES`).
* ``metric-classes.md``: every registered metric (``capeval.registry``): class, docstring, result keys, options.
* ``<!-- include: PATH § HEADING -->`` in a page: replaced by that section of ``docs/PATH`` (the heading line and
  everything under it, up to the next heading of the same or a higher level), its heading at level 3.
* ``<!-- options: METRIC ... -->``: a table of those metrics' keyword options, defaults and CLI flags.
* ``<!-- metric classes -->``: a mkdocstrings entry for the class of every registered metric.
* Links written for GitHub that leave ``docs/`` are mapped into the site: ``README.md`` → ``index.md`` (its
  which-metric section → ``which-metric.md``), ``BENCHMARKS.md`` → the results page holding the anchor, ``docs/X`` →
  ``X``; a link to any other file of the repository (source, scripts) becomes its text and the file's path in code,
  since the site does not hold them. A link to a file that does not exist is left alone, so ``mkdocs build --strict`` reports it.
"""
from __future__ import annotations

import functools
import os
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+(?:\([^()]*\))?[^()\s]*)\)")
INCLUDE = re.compile(r"^<!-- include: (\S+) § (.+?) -->$", re.M)
OPTIONS = re.compile(r"^<!-- options: ([a-z0-9_ ]+) -->$", re.M)
CLASSES = re.compile(r"^<!-- metric classes -->$", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
GENERATED = {"which-metric.md", "results.md", "results/defaults.md", "results/topics.md", "cli.md", "metric-classes.md"}


def _section(text: str, heading: str, where: str) -> str:
    """The section of ``text`` whose heading line reads ``heading`` (any level), up to the next heading of the same or
    a higher level (lines inside code fences are not headings)."""
    lines = text.splitlines()
    fenced = False
    start = level = None
    out = []
    for line in lines:
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else re.match(r"^(#{1,6}) (.+?)\s*$", line)
        if start is None:
            if match and match.group(2) == heading:
                start, level = True, len(match.group(1))
                out.append(line)
            continue
        if match and len(match.group(1)) <= level:
            break
        out.append(line)
    if start is None:
        raise ValueError(f"{where}: no heading {heading!r} (the site includes that section; update docs/_hooks/capeval_site.py "
                         "or the page that includes it)")
    return "\n".join(out).strip() + "\n"


def _outside_docs(repo_path: str, anchor: str, page_dir: str) -> str | None:
    """The site page a repository file outside ``docs/`` stands for (relative to ``page_dir``), or None."""
    if repo_path == "README.md":  # its which-metric section is a page of its own; the rest is the front page
        if anchor == "#which-metric-should-i-report":
            return posixpath.relpath("which-metric.md", page_dir or ".")
        return posixpath.relpath("index.md", page_dir or ".")
    if repo_path == "BENCHMARKS.md":
        page = results_anchors().get(anchor[1:], "results.md")
        return posixpath.relpath(page, page_dir or ".") + anchor
    return None


def rebase(markdown: str, source_dir: str, page_dir: str) -> str:
    """Rewrite the relative links of ``markdown``, written in repository folder ``source_dir``, for a site page in
    docs folder ``page_dir`` (see the module docstring). Code fences are left as they are."""

    def fix(match: re.Match) -> str:
        image, text, target = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path, _, anchor = target.partition("#")
        anchor = f"#{anchor}" if anchor else ""
        repo_path = posixpath.normpath(posixpath.join(source_dir, path)) if path else None
        if repo_path is None:
            return match.group(0)
        if repo_path.startswith("docs/"):
            target = repo_path[5:]
            if target == "cli.md" and anchor:  # the reference has a page per command
                target = cli_page(anchor[1:])
            return f"{image}[{text}]({posixpath.relpath(target, page_dir or '.')}{anchor})"
        mapped = _outside_docs(repo_path, anchor, page_dir)
        if mapped is not None:
            return f"{image}[{text}]({mapped})"
        if (ROOT / repo_path).exists():  # source, scripts, data files: not part of the site
            plain = text.strip("`")
            return text if plain.rstrip("/") == repo_path.rstrip("/") or plain == Path(repo_path).name \
                else f"{text} (`{repo_path}`)"
        return match.group(0)  # broken: left for --strict to report

    parts, last = [], 0
    for fence in FENCE.finditer(markdown):
        parts.append(LINK.sub(fix, markdown[last:fence.start()]))
        parts.append(fence.group(0))
        last = fence.end()
    parts.append(LINK.sub(fix, markdown[last:]))
    return "".join(parts)


def _score_flags() -> set[str]:
    """Every option string of ``capeval score``."""
    from capeval.cli import build_parser

    for words, parser in _commands(build_parser()):
        if words == ("capeval", "score"):
            return {flag for action in parser._actions for flag in action.option_strings}
    return set()


def options_table(metrics: list[str], page_dir: str = "", note: bool = True, skip: set[str] | None = None) -> str:
    """A markdown table of the keyword options of ``metrics`` (``capeval.score(..., option=...)``): each option's
    default, command-line flag, what it takes and does, and the metrics that take it, read from its one declaration
    (:func:`capeval.metric_options`); ``note``: followed by a paragraph saying where the table comes from;
    ``skip``: options left out (already in an earlier table of the page)."""
    from capeval import metric_options
    from capeval.cli.metric_flags import flag_of

    flags = _score_flags()
    declared = {metric: metric_options(metric) for metric in metrics}
    rows, seen = [], set(skip or ())
    for metric in metrics:
        for option, declaration in declared[metric].items():
            if option in seen:
                continue
            seen.add(option)
            users = [m for m in metrics if option in declared[m]]
            default = declaration.default
            shown = "—" if default is None else f"`{default!r}`"
            flag = flag_of(option, declaration)
            flag = f"`{flag}`" if flag in flags else "—"
            takes = declaration.expected()
            what = " ".join(declaration.help.split()).replace("|", "\\|")
            rows.append(f"| `{option}` | {shown} | {flag} | {takes}: {what} | {', '.join(users)} |")
    head = ["| option (`capeval.score`, `evaluate`) | default | command line | what it takes and does | metrics |",
            "|---|---|---|---|---|"]
    up = posixpath.relpath(".", page_dir or ".")
    up = "" if up == "." else up + "/"
    note = "" if not note else (
        "\nRead from the options' declarations (`capeval.metric_options`) when this site was built; the flags of "
        f"`capeval score --help` ([command line]({up}cli/score.md#capeval-score)) and the `evaluate` modules' keywords "
        "come from the same declarations. Options that every metric shares (`cleanup`, `tokenizer`, `empty`, "
        "`max_caption_chars`) are `capeval.score`'s own.\n")
    return "\n".join(head + rows) + "\n" + note


def _demote(section: str, top: int) -> str:
    """``section`` with its first heading at level ``top`` and the headings under it shifted alike (code fences
    left alone), so that an included section sits under the including page's own ``##`` headings."""
    lines, fenced, shift = section.splitlines(), False, None
    for i, line in enumerate(lines):
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else re.match(r"^(#{1,6}) ", line)
        if match:
            level = len(match.group(1))
            shift = top - level if shift is None else shift
            lines[i] = "#" * min(max(level + shift, 1), 6) + line[level:]
    return "\n".join(lines) + "\n"


def _includes(markdown: str, page_src: str) -> str:
    page_dir = posixpath.dirname(page_src)

    def include(match: re.Match) -> str:
        path, heading = match.group(1), match.group(2)
        source = ROOT / "docs" / path
        text = _section(source.read_text(encoding="utf-8"), heading, f"docs/{path}")
        return rebase(_demote(text, 3), posixpath.dirname(f"docs/{path}"), page_dir)

    markdown = INCLUDE.sub(include, markdown)
    markdown = CLASSES.sub(lambda m: metric_class_directives(), markdown)
    return OPTIONS.sub(lambda m: options_table(m.group(1).split(), page_dir), markdown)


# -- generated pages -----------------------------------------------------------------------------------------------


def _commands(parser, path=("capeval",)):
    """``(command words, parser)`` for ``parser`` and every sub-command under it, depth first, in declaration order."""
    import argparse

    yield path, parser
    seen = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if id(sub) in seen:
                    continue  # an alias
                seen.add(id(sub))
                yield from _commands(sub, (*path, name))


def _help_pages() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """``{page: [(command words, its --help at 100 columns)]}``: ``cli.md`` holds ``capeval`` itself,
    ``cli/<command>.md`` each top-level command and the sub-commands under it."""
    from capeval.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        pages: dict[str, list] = {}
        for words, sub in _commands(build_parser()):
            page = "cli.md" if len(words) == 1 else f"cli/{words[1]}.md"
            pages.setdefault(page, []).append((words, sub.format_help().rstrip()))
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return pages


@functools.lru_cache(maxsize=1)
def _top_commands() -> tuple[str, ...]:
    """The top-level ``capeval`` commands, longest first (``score-dataset`` before ``score``)."""
    from capeval.cli import build_parser

    names = {words[1] for words, _ in _commands(build_parser()) if len(words) == 2}
    return tuple(sorted(names, key=len, reverse=True))


def cli_page(anchor: str) -> str:
    """The command-line reference page holding ``anchor`` (``capeval-score-dataset`` → ``cli/score-dataset.md``);
    ``cli.md`` for ``capeval`` itself or an anchor of no command."""
    for name in _top_commands():
        slug = _slug(f"capeval {name}")
        if anchor == slug or anchor.startswith(slug + "-"):
            return f"cli/{name}.md"
    return "cli.md"


def cli_reference() -> dict[str, str]:
    """``{page: markdown}`` of the command-line reference: every command's help, as ``capeval ... --help`` prints it
    at 100 columns; ``cli.md`` lists the commands, each top-level command has a page with its sub-commands."""
    from capeval import __version__

    pages = _help_pages()
    intro = (f"Every `capeval` command's `--help`, generated from `capeval.cli.build_parser()` when this site was "
             f"built (capeval {__version__}). Examples of use: [Command line](usage/command-line.md).")
    out = {}
    listing = []
    for page, helps in pages.items():
        if page == "cli.md":
            continue
        (words, _), rest = helps[0], helps[1:]
        subs = ", ".join(f"`{' '.join(w[2:])}`" for w, _ in rest)
        listing.append(f"- [`{' '.join(words)}`]({page})" + (f": {subs}" if subs else ""))
        parts = [f"# `{' '.join(words)}`", "", f"Part of the [command line reference](../cli.md). {intro}"
                 .replace("](usage/", "](../usage/"), "", "```text", helps[0][1], "```", ""]
        for sub_words, text in rest:
            parts += [f"## `{' '.join(sub_words)}`", "", "```text", text, "```", ""]
        out[page] = "\n".join(parts)
    (words, text), = pages["cli.md"]
    head = ["# Command line reference", "", intro, "", f"## `{' '.join(words)}`", "", "```text", text, "```", "",
            "## The commands", "", "Each command's page holds its help and its sub-commands'.", "", *listing, ""]
    return {"cli.md": "\n".join(head), **out}


def which_metric() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = _section(readme, "Which metric should I report?", "README.md")
    section = section.replace("## Which metric should I report?", "# Which metric should I report?", 1)
    note = ("The table of the [README](index.md); the numbers behind it are on the [results page](results.md) and "
            "each metric's page says how it is computed.\n\n")
    body = section.split("\n", 1)[1]
    return rebase("# Which metric should I report?\n\n" + note + body, "", "")


#: The pages BENCHMARKS.md is split into (none over 40 KB): ``(page, title, headings)``, each page taking the ``##``
#: sections whose heading starts with one of its ``headings``; the first page also takes the text before the first
#: ``##``, the last every section no page names.
RESULTS_PAGES = (
    ("results.md", None, ("Figures", "Leaderboard")),
    ("results/defaults.md", "Results: the learned metrics' defaults and provenance",
     ("How the learned metrics' defaults are chosen", "Provenance and contamination")),
    ("results/topics.md", "Results: each measured topic", ()),
)


def _results_sections() -> dict[str, list[str]]:
    """``{page: [markdown of each of its sections]}``: BENCHMARKS.md cut at its ``##`` headings (outside code fences)
    and shared out by :data:`RESULTS_PAGES`."""
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    sections, fenced = [[]], False
    for line in text.splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append([])
        sections[-1].append(line)
    pages: dict[str, list[str]] = {page: [] for page, _, _ in RESULTS_PAGES}
    pages[RESULTS_PAGES[0][0]].append("\n".join(sections[0]))
    for lines in sections[1:]:
        heading = lines[0][3:]
        page = next((page for page, _, starts in RESULTS_PAGES if heading.startswith(starts)), RESULTS_PAGES[-1][0])
        pages[page].append("\n".join(lines))
    return pages


def _slug(heading: str) -> str:
    """The anchor of a markdown heading, as this site's toc makes it (``pymdownx.slugs.slugify``, lower case)."""
    from pymdownx.slugs import slugify

    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("**", "")
    return slugify(case="lower")(text, "-")


def results_anchors() -> dict[str, str]:
    """``{anchor: results page}`` for every heading of BENCHMARKS.md (read again when the file changes)."""
    return _results_anchors((ROOT / "BENCHMARKS.md").stat().st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _results_anchors(mtime_ns: int) -> dict[str, str]:
    out = {}
    for page, sections in _results_sections().items():
        for section in sections:
            fenced = False
            for line in section.splitlines():
                if line.startswith(("```", "~~~")):
                    fenced = not fenced
                match = None if fenced else re.match(r"^#{1,6} (.+?)\s*$", line)
                if match:
                    out.setdefault(_slug(match.group(1)), page)
    return out


def results_pages() -> dict[str, str]:
    """``{page: markdown}`` of the results pages generated from BENCHMARKS.md (:data:`RESULTS_PAGES`); a link from
    one to a section of another is pointed at the page that holds it."""
    others = ", ".join(f"[{title[len('Results: '):]}]({page})" for page, title, _ in RESULTS_PAGES[1:])
    archive = ("\n\nThe results continue on two more pages: " + others + ". The archive (dated notes, every run, "
               "not in the navigation): the [lab notes](benchmarks/lab-notes.md) and the "
               "[measurements](benchmarks/measurements.md).\n")
    out = {}
    for page, title, _ in RESULTS_PAGES:
        body = "\n\n".join(_results_sections()[page])
        body = re.sub(r"\]\(#", "](BENCHMARKS.md#", body)  # within BENCHMARKS.md: perhaps another page now
        if title is None:
            head, _, rest = body.partition("\n## ")
            body = head.rstrip() + archive + "\n## " + rest
        else:
            body = f"# {title}\n\nPart of the [results](BENCHMARKS.md).\n\n" + body
        out[page] = rebase(body, "", posixpath.dirname(page))
    return out


def _first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line (empty if there is none)."""
    import inspect

    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n", 1)[0].split())


def metric_class_directives() -> str:
    """A mkdocstrings ``::: module.Class`` line for the class of every registered metric (a class computing several
    metrics, once), in the registry's order."""
    from capeval.registry import REGISTRY, metric_class

    paths = dict.fromkeys(f"{cls.__module__}.{cls.__qualname__}" for cls in map(metric_class, REGISTRY))
    return "\n\n".join(f"::: {path}" for path in paths) + "\n"


def metric_reference() -> str:
    """Markdown of every registered metric (:data:`capeval.registry.REGISTRY`, built-ins then plug-ins), one section
    each: its class, the first paragraph of the class's docstring, its result keys and its options table."""
    from capeval import metric_options
    from capeval.registry import ALIASES, REGISTRY, metric_class

    parts = ["# Metric classes", "",
             "Every metric `capeval.score(..., metrics=[...])` takes, read from the registry (`capeval.registry`) when "
             "this site was built: the class that computes it, what its docstring says first, the result keys it "
             "returns (corpus floats; `per_caption` holds the same keys per caption) and its keyword options. The "
             "classes' full docstrings: [Python API](api.md); how each family is computed: the metric pages.", "",
             "The options are read from their declarations (`capeval.metric_options(name)`); the flags of "
             "`capeval score --help` ([command line](cli/score.md#capeval-score)) and the `evaluate` modules' keywords "
             "come from the same declarations. Options that every metric shares (`cleanup`, `tokenizer`, `empty`, "
             "`max_caption_chars`) are `capeval.score`'s own ([Python API](api.md)).", ""]
    first: dict[str, str] = {}  # option -> the metric whose table shows it
    for name, spec in REGISTRY.items():
        cls = metric_class(name)
        aliases = sorted(alias for alias, target in ALIASES.items() if target == name)
        parts += [f"## `{name}`", "",
                  f"Class `{cls.__module__}.{cls.__qualname__}`" + (f", from `{spec.source}`" if spec.source else "")
                  + (f"; also spelled {', '.join(f'`{a}`' for a in aliases)}" if aliases else "") + ".", "",
                  _first_paragraph(cls.__doc__), "",
                  "Result keys: " + ", ".join(f"`{key}`" for key in spec.keys) + ".", ""]
        options = list(metric_options(name))
        earlier = [option for option in options if option in first]
        if len(earlier) < len(options):
            parts += [options_table([name], note=False, skip=set(first))]
        if earlier:
            by_metric: dict[str, list[str]] = {}
            for option in earlier:
                by_metric.setdefault(first[option], []).append(f"`{option}`")
            also = "; ".join(f"[`{owner}`](#{owner})'s {', '.join(names)}" for owner, names in by_metric.items())
            parts += [f"Also takes, in the table of the metric named: {also}."]
        if not options:
            parts += ["No options of its own."]
        parts += [""]
        for option in options:
            first.setdefault(option, name)
    return "\n".join(parts)


def generated_pages() -> dict[str, str]:
    """``{page: markdown}`` of every page this hook generates (``cli/*.md`` and :data:`GENERATED`)."""
    pages = {"which-metric.md": which_metric(), "metric-classes.md": metric_reference()}
    return {**cli_reference(), **pages, **results_pages()}


def _generated(src: str) -> bool:
    return src in GENERATED or src.startswith("cli/")


def page_markdown(src: str) -> str:
    """The markdown the site renders for page ``src`` (a path under docs/): generated, or the file with its
    ``include`` and ``options`` markers expanded (links not rebased)."""
    if _generated(src):
        return generated_pages()[src]
    return _includes((ROOT / "docs" / src).read_text(encoding="utf-8"), src)


def on_files(files, config):
    pages = generated_pages()
    assert all(map(_generated, pages)) and GENERATED <= set(pages), sorted(set(pages) ^ GENERATED)
    for name, content in pages.items():
        files.append(File.generated(config, name, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    src = page.file.src_uri
    if _generated(src):
        return markdown
    markdown = _includes(markdown, src)
    return rebase(markdown, posixpath.dirname(f"docs/{src}"), posixpath.dirname(src))
