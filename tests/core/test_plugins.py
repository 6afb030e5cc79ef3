"""Plug-in metrics: a distribution declaring an entry point in ``capeval.metrics`` adds its metric with no edit to
capeval (the documentation's first example, exactly as written), and a broken one is one warning, never a crash."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import capeval
from capeval.plugins import PluginWarning
from capeval.registry import REGISTRY

#: The documentation's first example, exactly as written there.
WORD_COUNT = '''
from capeval import CaptionMetric, MetricOutput, Option

class WordCount(CaptionMetric):
    """Mean caption length: a baseline every benchmark should beat."""

    name = "word_count"
    keys = ("word_count",)
    uses_tokens = False
    options = {"word_count_unit": Option(default="words", choices=("words", "chars"), help="what to count")}

    def compute(self, batch):
        unit = self.config["word_count_unit"]
        values = [float(len(p.split()) if unit == "words" else len(p)) for p in batch.predictions]
        return MetricOutput(corpus={"word_count": sum(values) / len(values)},
                            per_caption={"word_count": values}, signature=f"unit={unit}")
'''


def _install(folder, module: str, source: str, points: dict[str, str], dist: str = "capeval-word-count") -> None:
    """A distribution as pip leaves it on sys.path: its module and a dist-info with the entry points."""
    (folder / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = folder / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n", encoding="utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[capeval.metrics]\n{lines}", encoding="utf-8")


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    import importlib

    # sys.path by hand: monkeypatch.syspath_prepend calls pkg_resources, which may be broken once imported
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.delenv("CAPEVAL_PLUGINS", raising=False)
    REGISTRY.reload()
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith(("capeval_word_count", "broken_plugin"))]:
            del sys.modules[name]
        monkeypatch.undo()
        importlib.invalidate_caches()
        REGISTRY.reload()


def test_the_documented_plug_in_works_through_score(plugin_path):
    _install(plugin_path, "capeval_word_count", WORD_COUNT, {"word_count": "capeval_word_count:WordCount"})
    REGISTRY.reload()
    result = capeval.score(["a dog runs", "a cat"], [["a dog"], ["a cat sits"]], metrics=["word_count", "bleu_1"])
    assert result["word_count"] == 2.5 and result["per_caption"]["word_count"] == [3.0, 2.0]
    assert "word_count:unit=words" in result["signature"] and "bleu_1" in result
    chars = capeval.score(["a dog"], [["a dog"]], metrics="word_count", word_count_unit="chars")
    assert chars["word_count"] == 6.0 and "unit=chars" in chars["signature"]  # the cleaned text, "A dog."
    with pytest.raises(ValueError, match="word_count_unit must be one of 'words', 'chars', got 'char'; did you mean "
                                         "'chars'"):
        capeval.score(["a dog"], [["a dog"]], metrics="word_count", word_count_unit="char")
    with pytest.raises(ValueError, match="did you mean 'word_count'"):
        capeval.score(["a dog"], [["a dog"]], metrics="word_cont")
    assert "word_count" in capeval.available_metrics()
    assert capeval.metric_options("word_count")["word_count_unit"].help == "what to count"
    assert REGISTRY["word_count"].source == "capeval-word-count==0.1.0"


def test_the_plug_in_on_the_command_line_and_in_score_dataset(plugin_path, tmp_path):
    _install(plugin_path, "capeval_word_count", WORD_COUNT, {"word_count": "capeval_word_count:WordCount"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")])}
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text(json.dumps(["a dog runs", "a cat"]))
    refs.write_text(json.dumps([["a dog"], ["a cat sits"]]))
    done = subprocess.run([sys.executable, "-m", "capeval", "score", "--predictions", str(preds), "--references",
                           str(refs), "--metrics", "word_count", "--word-count-unit", "chars", "--json", "-",
                           "--no-language-check"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["word_count"] == 8.5  # "A dog runs." and "A cat."
    helped = subprocess.run([sys.executable, "-m", "capeval", "score", "--help"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert "--word-count-unit" in helped.stdout and "what to count" in helped.stdout
    bad = subprocess.run([sys.executable, "-m", "capeval", "score", "--predictions", str(preds), "--references",
                          str(refs), "--metrics", "word_count", "--word-count-unit", "lines"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "unknown --word-count-unit 'lines'; valid: words, chars" in bad.stderr
    pytest.importorskip("pyarrow")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": i, "prediction": p, "references": r}) + "\n"
                            for i, (p, r) in enumerate([("a dog runs", ["a dog"]), ("a cat", ["a cat sits"])])))
    scored = subprocess.run([sys.executable, "-m", "capeval", "score-dataset", str(rows), "--out", str(tmp_path / "out"),
                             "--metrics", "word_count,bleu", "--chunk-size", "1", "--no-language-check"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert scored.returncode == 0, scored.stderr
    assert json.loads((tmp_path / "out" / "result.json").read_text())["word_count"] == 2.5


@pytest.mark.parametrize("case, source, target, expected", [
    ("import error", "import no_such_module_here\n", "broken_plugin:Thing", "ModuleNotFoundError"),
    ("not a metric", "class Thing:\n    name = 'thing'\n", "broken_plugin:Thing", "not a subclass"),
    ("wrong name", "from capeval import CaptionMetric\nclass Thing(CaptionMetric):\n    name = 'other'\n"
                   "    keys = ('thing',)\n    def compute(self, batch):\n        pass\n",
     "broken_plugin:Thing", "not the entry point's 'thing'"),
    ("no keys", "from capeval import CaptionMetric\nclass Thing(CaptionMetric):\n    name = 'thing'\n"
                "    def compute(self, batch):\n        pass\n", "broken_plugin:Thing", "keys must be"),
    ("a built-in's key", "from capeval import CaptionMetric\nclass Thing(CaptionMetric):\n    name = 'thing'\n"
                         "    keys = ('bleu_4',)\n    def compute(self, batch):\n        pass\n",
     "broken_plugin:Thing", "capeval's already"),
    ("an unprefixed option", "from capeval import CaptionMetric, Option\nclass Thing(CaptionMetric):\n"
                             "    name = 'thing'\n    keys = ('thing',)\n    options = {'size': Option(1, help='x')}\n"
                             "    def compute(self, batch):\n        pass\n", "broken_plugin:Thing", "begin with 'thing_'"),
    ("no such attribute", "x = 1\n", "broken_plugin:Missing", "AttributeError"),
])
def test_a_broken_plug_in_is_one_warning_and_capeval_goes_on(plugin_path, case, source, target, expected):
    _install(plugin_path, "broken_plugin", source, {"thing": target}, dist="broken-plugin")
    REGISTRY.reload()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        names = list(REGISTRY)
        result = capeval.score(["a dog"], [["a dog"]], metrics="bleu_1")
    plugin_warnings = [w for w in seen if issubclass(w.category, PluginWarning)]
    assert "thing" not in names and result["bleu_1"] > 0
    assert len(plugin_warnings) == 1, [str(w.message) for w in seen]
    message = str(plugin_warnings[0].message)
    assert "thing = " in message and "broken-plugin 0.1.0" in message and expected in message, message
    assert "\n" not in message


def test_plug_ins_can_be_switched_off(plugin_path, monkeypatch):
    _install(plugin_path, "capeval_word_count", WORD_COUNT, {"word_count": "capeval_word_count:WordCount"})
    monkeypatch.setenv("CAPEVAL_PLUGINS", "0")
    REGISTRY.reload()
    assert "word_count" not in REGISTRY
    with pytest.raises(ValueError, match="Unknown metric 'word_count'"):
        capeval.score(["a dog"], [["a dog"]], metrics="word_count")


def test_the_plug_in_in_a_benchmark(plugin_path, tmp_path):
    """``capeval bench`` correlates a plug-in metric with the human judgments like any other (caption length on
    Flickr8k-Expert: the τ-c of word counts), and says that it is not in capeval's catalog."""
    from support import require_data

    require_data("flickr8k", "ExpertAnnotations.txt")
    _install(plugin_path, "capeval_word_count", WORD_COUNT, {"word_count": "capeval_word_count:WordCount"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "-m", "capeval", "bench", "flickr8k-expert", "--metrics", "word_count",
                           "--json", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    row = json.loads(out.read_text())["results"]["word_count"]
    assert row["rows"] == 16992 and row["tau_c"] == pytest.approx(-0.0953, abs=5e-4)
    assert "word_count:unit=words" in row["signature"]
    assert any("not in capeval's catalog" in note for note in row["contamination"])


def test_the_plug_in_as_an_evaluate_module(plugin_path, tmp_path):
    """``capeval hub build-metric word_count`` writes an evaluate module generated from the plug-in's class, which
    ``evaluate.load`` runs: its options as keywords (documented from their declarations), its card's options table,
    the plug-in's distribution in ``requirements.txt``; ``--kind space`` adds the gradio app."""
    evaluate = pytest.importorskip("evaluate")
    from capeval.hub.metric_folder import build_metric_folder

    _install(plugin_path, "capeval_word_count", WORD_COUNT, {"word_count": "capeval_word_count:WordCount"})
    REGISTRY.reload()
    built = build_metric_folder("word_count", tmp_path / "capeval-word-count", kind="metric",
                                hub_id="someone/capeval-word-count")
    assert built.files == ["README.md", "capeval-word-count.py", "requirements.txt"]
    folder = built.folder
    requirements = (folder / "requirements.txt").read_text().split()
    assert requirements[1] == "capeval-word-count==0.1.0" and requirements[0].startswith("capeval[evaluate]==")
    card = (folder / "README.md").read_text()
    assert "| `word_count_unit` | `'words'` | one of 'words', 'chars': what to count |" in card
    assert "homepage: https://pypi.org/project/capeval-word-count/" in card and "sdk:" not in card
    assert "Mean caption length: a baseline every benchmark should beat." in card
    module = evaluate.load(str(folder))
    result = module.compute(predictions=["a dog runs", "a cat"], references=[["a dog"], "a cat sits"])
    assert result["word_count"] == 2.5 and result["per_caption"]["word_count"] == [3.0, 2.0]
    chars = module.compute(predictions=["a dog"], references=["a dog"], word_count_unit="chars")
    assert chars["word_count"] == 6.0 and "unit=chars" in chars["signature"]
    assert "word_count_unit (`str`, optional): what to count" in module.inputs_description
    with pytest.raises(ValueError, match="did you mean 'chars'"):
        module.compute(predictions=["a dog"], references=["a dog"], word_count_unit="char")
    space = build_metric_folder("word_count", tmp_path / "space" / "word_count", kind="space")
    assert space.files == ["README.md", "app.py", "requirements.txt", "word_count.py"]
    assert "plugin_space(__file__, 'word_count')" in (space.folder / "app.py").read_text()
    assert (space.folder / "requirements.txt").read_text().split()[-1].startswith("gradio==")
    done = subprocess.run([sys.executable, "-m", "capeval", "hub", "build-metric", "word_count", "--out",
                           str(tmp_path / "cli" / "word_count")], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path),
                                                                             os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 0, done.stderr
    generated = (tmp_path / "cli" / "word_count" / "word_count.py").read_text()
    assert generated == (folder / "capeval-word-count.py").read_text()
    pytest.importorskip("gradio")
    from capeval.hf.space import plugin_space

    assert plugin_space(str(space.folder / "app.py"), "word_count") is not None  # the Blocks build


def test_build_metric_names_plug_ins_among_the_modules(plugin_path, tmp_path):
    from capeval.hub.metric_folder import build_metric_folder

    _install(plugin_path, "capeval_word_count", WORD_COUNT, {"word_count": "capeval_word_count:WordCount"})
    REGISTRY.reload()
    with pytest.raises(ValueError, match=r"unknown metric module 'word_cont'; the metrics folder has: .*thumb, "
                                         r"word_count\."):
        build_metric_folder("word_cont", tmp_path / "x")


def test_the_plug_in_reaches_the_leaderboard(plugin_path, tmp_path):
    """A plug-in metric's ``capeval bench --json`` result is a leaderboard row like a built-in's: its τ-c in the
    Flickr8k-Expert column, its contamination note (not in capeval's catalog) as a footnote, in the text, the
    markdown and the JSON."""
    from support import require_data

    require_data("flickr8k", "ExpertAnnotations.txt")
    _install(plugin_path, "capeval_word_count", WORD_COUNT, {"word_count": "capeval_word_count:WordCount"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    bench, board, markdown = tmp_path / "bench.json", tmp_path / "board.json", tmp_path / "board.md"
    done = subprocess.run([sys.executable, "-m", "capeval", "bench", "flickr8k-expert", "--metrics",
                           "word_count,bleu_4", "--json", str(bench)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "capeval", "leaderboard", str(bench), "--json", str(board),
                           "--markdown", str(markdown)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(bench.read_text())["results"]
    table = json.loads(board.read_text())
    rows = {row["metric"]: row["cells"] for row in table["rows"]}
    # the plug-in is a row like the built-in, in the payload's order (and the length baseline every bench run adds)
    assert list(rows) == ["word_count", "bleu_4", "caption_length"]
    column = "flickr8k-expert/clipscore/all/tau_c"
    assert [c["key"] for c in table["columns"]] == [column]
    for key in ("word_count", "bleu_4"):
        assert rows[key][column]["value"] == pytest.approx(result[key]["headline"]["value"])
        assert rows[key][column]["contamination"] == result[key]["contamination"]
    assert rows["word_count"][column]["value"] == pytest.approx(-0.0953, abs=5e-4)
    notes = [n for n in table["footnotes"] if any(r == "word_count" for r, _ in map(dict.values, n["cells"]))]
    assert any("not in capeval's catalog" in n["text"] for n in notes)
    line = next(line for line in done.stdout.splitlines() if line.startswith("word_count"))
    assert "-.095" in line and "?" in line
    assert "| `word_count` | -.095" in markdown.read_text()
