"""The documentation site (mkdocs.yml, docs/): `mkdocs build --strict` passes, so a broken link, a missing anchor or a
missing API reference fails CI; the generated pages (CLI reference, which-metric, results) hold what they promise."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from support import ROOT

pytest.importorskip("mkdocs")
pytest.importorskip("material")
pytest.importorskip("mkdocstrings")


def _build(config, site, cwd=ROOT):
    # its duration: benchmarks/docs_build_speed.py
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=cwd, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return proc


def _hooks():
    spec = importlib.util.spec_from_file_location("capeval_site_hooks", ROOT / "docs" / "_hooks" / "capeval_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = _build(ROOT / "mkdocs.yml", out)
    warnings = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("WARNING")]
    assert proc.returncode == 0 and not warnings, (proc.stdout + proc.stderr)[-4000:]
    return out


def test_every_page_is_built(site):
    for page in ("index.html", "which-metric/index.html", "results/index.html", "benchmarks/lab-notes/index.html",
                 "metrics/coco/index.html", "metrics/spice/index.html", "metrics/learned/index.html",
                 "vision_language/index.html", "metrics/thumb/index.html", "reproducing/index.html",
                 "scoring-datasets/index.html", "human-evaluation/index.html", "api/index.html", "cli/index.html",
                 "metric-classes/index.html", "cli/score/index.html", "results/defaults/index.html",
                 "results/topics/index.html", "usage/index.html", "usage/python/index.html",
                 "usage/command-line/index.html", "usage/hub-and-trainer/index.html"):
        assert (site / page).is_file(), page


def test_cli_reference_is_generated_from_the_parser(site):
    from capeval.cli import build_parser

    commands = [words for words, _ in _hooks()._commands(build_parser())]
    assert len(commands) > 30 and ("capeval", "models", "random") in commands and ("capeval", "leaderboard") in commands
    index = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for words in commands:
        page = site / "cli" / (words[1] if len(words) > 1 else "") / "index.html"
        html = page.read_text(encoding="utf-8")
        assert f"<code>{' '.join(words)}</code>" in html, words
        if len(words) == 2:
            assert f'href="{words[1]}/"' in index, words
    leaderboard = (site / "cli" / "leaderboard" / "index.html").read_text(encoding="utf-8")
    assert "--plot" in leaderboard.split("<code>capeval leaderboard</code>", 1)[1]


def test_api_reference_renders_the_docstrings(site):
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("capeval.score", "capeval.score_dataset", "plot_leaderboard", "write_random_models"):
        assert name in html, name
    assert "Score captions with any subset of capeval" in html  # capeval.score's docstring, rendered


def test_figures_are_shown_with_their_commands(site):
    for figure in ("leaderboard.png", "flickr8k-expert.png", "pascal50s.png"):
        path = ROOT / "docs" / "figures" / figure
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size < 300_000, figure
        assert (site / "figures" / figure).is_file()
    results = (site / "results" / "index.html").read_text(encoding="utf-8")
    assert all(f"figures/{f}" in results for f in ("leaderboard.png", "flickr8k-expert.png", "pascal50s.png"))
    assert "capeval leaderboard" in results and "--plot" in results
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"!\[[^\]]*\]\(docs/figures/[a-z0-9-]+\.png\)", readme)


def test_options_tables_read_the_metric_classes(site):
    from capeval.registry import metric_class

    html = (site / "metrics" / "coco" / "index.html").read_text(encoding="utf-8")
    for option in metric_class("cider_d").options:
        assert f"<code>{option}</code>" in html, option


def test_rebase_maps_github_links_into_the_site():
    rebase = _hooks().rebase
    text = ("[a](BENCHMARKS.md#leaderboard) [b](docs/usage.md#python) [c](benchmarks/claims.sh) "
            "[d](README.md) [e](https://example.org) [f](nowhere.md)\n```\n[g](docs/usage.md)\n```\n")
    out = rebase(text, "", "metrics")
    assert "[a](../results.md#leaderboard)" in out and "[b](../usage.md#python)" in out
    assert "c (`benchmarks/claims.sh`)" in out and "[d](../index.md)" in out
    assert "[e](https://example.org)" in out and "[f](nowhere.md)" in out  # a broken link stays, for --strict
    assert "[g](docs/usage.md)" in out  # code is left alone


def test_a_broken_link_fails_the_build(tmp_path):
    """The check the site relies on: a page linking to a missing page or anchor makes the strict build fail."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("figures"))
    shutil.copytree(ROOT / "docs" / "figures", docs / "figures")
    (docs / "api.md").write_text("# API\n\nSee [the usage guide](usage.md#no-such-section).\n", encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}")
    config = config.replace("- docs/_hooks/capeval_site.py", f"- {ROOT / 'docs' / '_hooks' / 'capeval_site.py'}")
    config = config.replace("paths: [modules]", f"paths: [{ROOT / 'modules'}]")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site", cwd=tmp_path)
    assert proc.returncode != 0
    assert "does not contain an anchor '#no-such-section'" in proc.stdout + proc.stderr


def test_api_reference_covers_every_public_name_and_metric_class(site):
    import capeval
    from capeval.registry import REGISTRY, metric_class

    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    documented = set(re.findall(r'id="(capeval\.[\w.]+)"', html))
    for name in capeval.__all__:
        if name in ("__version__", "DEFAULT_MAX_CAPTION_CHARS"):  # constants: said in the page's text
            assert f"capeval.{name}" in html, name
            continue
        assert f"capeval.{name}" in documented, name
    for metric in REGISTRY:
        cls = metric_class(metric)
        assert f"{cls.__module__}.{cls.__qualname__}" in documented, metric


def test_metric_classes_page_has_a_section_per_metric(site):
    from capeval import metric_options
    from capeval.registry import REGISTRY, metric_class

    html = (site / "metric-classes" / "index.html").read_text(encoding="utf-8")
    sections = {m.group(1): m.group(2) for m in re.finditer(r'<h2 id="([a-z0-9_]+)">(.*?)(?=<h2 |\Z)', html, re.S)}
    assert list(sections) == list(REGISTRY)
    for metric, section in sections.items():
        cls = metric_class(metric)
        assert f"<code>{cls.__module__}.{cls.__qualname__}</code>" in section, metric
        assert all(f"<code>{key}</code>" in section for key in REGISTRY[metric].keys), metric
        assert all(f"<code>{option}</code>" in section for option in metric_options(metric)), metric
    assert "meteor_backend" in sections["meteor"] and "<table>" in sections["meteor"]


def _nav_pages() -> list[str]:
    """Every page named in mkdocs.yml's ``nav`` (a path under docs/)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^\n]*: )?(\S+\.md)\s*$", nav, re.M)


def test_no_page_in_the_navigation_is_over_40_kb():
    """A page a newcomer walks to stays readable: its markdown, generated or with its included sections, is at most
    40 KB (40,000 bytes of UTF-8). Longer notes live in the archive, outside the navigation."""
    hooks = _hooks()
    pages = _nav_pages()
    assert len(pages) > 20 and "index.md" in pages and "results.md" in pages and "api.md" in pages
    assert "benchmarks/measurements.md" not in pages and "benchmarks/lab-notes.md" not in pages
    pages += [page for page in hooks.generated_pages() if page not in pages]  # the command pages cli.md links
    sizes = {page: len(hooks.page_markdown(page).encode("utf-8")) for page in pages}
    assert not {page: size for page, size in sizes.items() if size > 40_000}, sizes


def test_the_archive_is_out_of_the_navigation_but_linked_from_the_results(site):
    results = (site / "results" / "index.html").read_text(encoding="utf-8")
    for page in ("lab-notes", "measurements"):
        assert (site / "benchmarks" / page / "index.html").is_file(), page
        assert f'href="../benchmarks/{page}/"' in results, page
        nav = results.split('<nav class="md-nav md-nav--primary"', 1)[1].split("</nav>", 1)[0]
        assert f"benchmarks/{page}/" not in nav, page


def test_results_are_split_with_their_links_pointing_at_the_right_page(site):
    hooks = _hooks()
    anchors = hooks.results_anchors()
    assert anchors["leaderboard"] == "results.md" and anchors["scoring-a-dataset"] == "results/topics.md"
    benchmarks = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    headings = [line for line in benchmarks.splitlines() if line.startswith("## ")]
    html = "".join((site / page.replace(".md", "") / "index.html").read_text(encoding="utf-8")
                   if page != "results.md" else (site / "results" / "index.html").read_text(encoding="utf-8")
                   for page, _, _ in hooks.RESULTS_PAGES)
    for heading in headings:
        assert f'id="{hooks._slug(heading[3:])}"' in html, heading
    learned = (site / "metrics" / "learned" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../results/defaults/#how-the-learned-metrics-defaults-are-chosen' in learned


def test_architecture_names_every_room_the_import_test_enforces():
    """docs/architecture.md's table of rooms names every module tests/core/test_architecture.py places in a room."""
    import ast

    source = (ROOT / "tests" / "core" / "test_architecture.py").read_text(encoding="utf-8")
    rooms = next(ast.literal_eval(node.value) for node in ast.parse(source).body
                 if isinstance(node, (ast.Assign, ast.AnnAssign))
                 and "ROOMS" in [t.id for t in getattr(node, "targets", [getattr(node, "target", None)])])
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = {line.split("|")[1].strip(): line.split("|")[2] for line in doc.splitlines() if line.startswith("| ")}
    assert len(rooms) >= 9
    for room, modules in rooms:
        assert room in table, room
        for module in filter(None, modules):
            assert re.search(rf"`{re.escape(module)}(/|\.py)?`", table[room]), (room, module)
