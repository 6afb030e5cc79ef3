"""Every evaluate module in metrics/: one template (script and card), doctests, card examples, Space app,
offline load in a fresh process."""
from __future__ import annotations

import ast
import doctest
import os
import re
import runpy
import subprocess
import sys

import pytest
from support import ROOT, hub_ids_mapped, needs, needs_weights, run_module_doctests

evaluate = pytest.importorskip("evaluate")

# name -> (metric class, compute() keyword arguments for a fresh-process smoke test, printed result key)
MODULES = {
    "coco_caption": ("CocoCaption", "predictions=['A dog runs.'], references=[['A dog runs fast.']], "
                     "metrics='bleu_1,rouge_l'", "rouge_l"),
    "spice": ("Spice", "predictions=['A dog runs.'], references=[['A dog runs fast.']]", "spice"),
    "spice_u": ("SpiceU", "predictions=['A dog runs.'], references=[['A dog runs fast.']]", "spice_u"),
    "thumb": ("Thumb", "precision=[5, 3], recall=[4, 3], fluency=[-0.1, 0], bootstrap_samples=0", "total"),
    "learned_critic": ("LearnedCritic", "predictions=['A dog runs.'], references=[['A dog runs fast.']]", "critic_ref"),
    "lceval": ("Lceval", "predictions=['A dog runs.'], references=[['A dog runs fast.']], metrics='lceval_released'",
               "lceval_released"),
    "sentence_cosine": ("SentenceCosine", "predictions=['A dog runs.'], references=[['A dog runs fast.']]",
                        "sentence_cosine"),
    # {images}, {clip_model}, {pac_model}: filled from the tiny_clip fixture (a random CLIP saved in tmp; no weights
    # are shipped or downloadable offline)
    "clip_score": ("ClipScore", "predictions=['A dog runs.', 'A cat sleeps.'], references=[['A dog runs fast.'], "
                   "'A cat.'], images={images}, clip_model={clip_model!r}", "clip_s"),
    "pac_score": ("PacScore", "predictions=['A dog runs.', 'A cat sleeps.'], references=[['A dog runs fast.'], "
                  "'A cat.'], images={images}, pac_model={pac_model!r}", "pac_s"),
    # {images}, {polos_model}: the tiny_polos fixture (a random RoBERTa + CLIP in the released checkpoint's layout)
    "polos": ("Polos", "predictions=['A dog runs.', 'A cat sleeps.'], references=[['A dog runs fast.'], 'A cat.'], "
              "images={images}, polos_model={polos_model!r}", "polos"),
    # {images}, {fleur_model}: the tiny_llava fixture (a tiny LLaVA-1.5 in transformers' layout) and the bundled cat
    # photo; the caption is one the tiny model was trained on, so its answer gives a number (not NaN)
    "fleur": ("Fleur", "predictions=['a tabby cat looking at the camera'], references=[['a cat with grey stripes']], "
              "images={images}, fleur_model={fleur_model!r}, metrics='fleur'", "fleur"),
    # {capture_parser}, {capture_text_encoder}: the tiny_capture fixture (a T5 fitted to these captions' graphs, a
    # random MPNet); its NLTK data reach the fresh process through NLTK_DATA
    "capture": ("Capture", "predictions={predictions!r}, references={references!r}, capture_parser={capture_parser!r}, "
                "capture_text_encoder={capture_text_encoder!r}, capture_device='cpu'", "capture"),
}
#: Modules that score with a CLIP: the torch stack and open_clip, and a tiny random checkpoint in the smoke test.
VISION_MODULES = ("clip_score", "pac_score", "polos")
CARD_SECTIONS = ("## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                 "Values from Popular Papers", "## Limitations and Bias", "## Citation")


pytestmark = pytest.mark.usefixtures("fresh_cache")


def _needs(name: str, weights: bool = False) -> None:
    """:func:`support.needs` (or :func:`support.needs_weights`), and for the CLIP modules their packages."""
    (needs_weights if weights else needs)(name)
    if name in VISION_MODULES:
        for module in ("torch", "torchvision", "open_clip", "transformers"):
            pytest.importorskip(module)


@pytest.mark.parametrize("name", MODULES)
def test_card_has_the_evaluate_sections(name):
    text = (ROOT / "metrics" / name / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n") and "app_file: app.py" in text and "- evaluate" in text
    for section in CARD_SECTIONS:
        assert section in text, f"{name} card lacks {section!r}"


TEMPLATES = ROOT / "docs" / "templates"


def test_every_metric_folder_is_tested():
    folders = sorted(p.name for p in (ROOT / "metrics").iterdir() if (p / f"{p.name}.py").is_file())
    assert folders == sorted(MODULES)


def _headings(markdown: str) -> list[str]:
    """Heading lines outside code blocks, the card title reduced to 'Metric Card for'."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.append("# Metric Card for" if line.startswith("# Metric Card for") else line.strip())
    return out


@pytest.mark.parametrize("name", MODULES)
def test_card_follows_the_template(name):
    template = _headings((TEMPLATES / "metric_card.md").read_text(encoding="utf-8"))
    assert _headings((ROOT / "metrics" / name / "README.md").read_text(encoding="utf-8")) == template


@pytest.mark.parametrize("name", MODULES)
def test_script_follows_the_template(name):
    """Module docstring, _CITATION/_DESCRIPTION/_KWARGS_DESCRIPTION, a documented class; its keywords explicit, or
    ``**options`` for the options of its metric families (``families``), which its description then documents from
    their declarations (``with_options(..., _FAMILY)``)."""
    tree = ast.parse((ROOT / "metrics" / name / f"{name}.py").read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), "module docstring"

    def literal(value):
        if isinstance(value, ast.Constant):
            return value.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "with_options":  # options from declarations
            return value.args[0].value.replace("    {metric options}\n", "")
        return None

    constants = {t.id: literal(node.value) for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name) and literal(node.value) is not None}
    for constant in ("_CITATION", "_DESCRIPTION", "_KWARGS_DESCRIPTION"):
        assert constants.get(constant, "").strip(), f"{constant} missing"
    kwargs_doc = constants["_KWARGS_DESCRIPTION"]
    sections = [kwargs_doc.find(f"\n{s}:\n") for s in ("Args", "Returns", "Raises", "Examples")]
    assert -1 not in sections and sections == sorted(sections), "Args/Returns/Raises/Examples, in that order"
    assert ">>> " in kwargs_doc.split("\nExamples:\n")[1]
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert ast.get_docstring(cls), f"{cls.name} docstring"
    assert any("add_start_docstrings" in ast.unparse(d) for d in cls.decorator_list)
    (compute,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_compute"]
    assert compute.args.vararg is None, "_compute takes keywords"
    for arg in compute.args.args[1:] + compute.args.kwonlyargs:
        assert re.search(rf"\b{arg.arg}\b", kwargs_doc), f"_compute argument {arg.arg!r} is not documented"
    if compute.args.kwarg is not None:  # **options: the families' options, as keywords and documented, from their
        # declarations (the signature evaluate's checks read lists them: takes_options)
        assert [ast.unparse(d) for d in compute.decorator_list] == ["takes_options(_FAMILY)"]
        assert any(isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "families" for n in cls.body)
        assert "with_options(" in ast.unparse(tree), "the options' description comes from their declarations"


@pytest.mark.parametrize("name", MODULES)
def test_a_module_takes_and_documents_every_option_of_its_metrics(name):
    """Every option of the metrics a module computes is one of its keywords and is described in its inputs (from
    the option's declaration: nothing restated in the script can drift)."""
    import inspect

    import evaluate

    from capeval.registry import metric_options

    module = evaluate.load(str(ROOT / "metrics" / name))
    families = getattr(module, "families", ())
    if not families:
        pytest.skip(f"{name}: its keywords are still written out in the script")
    described = module.info.inputs_description
    for family in families:
        for option, declaration in metric_options(family).items():
            assert f"    {option} (`" in described, f"{name}: {option} not described"
            assert " ".join(declaration.help.split()[:4]) in " ".join(described.split()), option
    parameters = inspect.signature(module._compute).parameters
    options = {o: d for f in families for o, d in metric_options(f).items()}
    assert all(p.kind is not p.VAR_KEYWORD for p in parameters.values()), "evaluate's checks: no **kwargs"
    for option, declaration in options.items():  # keywords with the declared defaults, written nowhere else
        assert parameters[option].default == declaration.default, option
    source = inspect.getsource(type(module)._compute)
    assert not any(f"{o}=" in source for o in options), "an option restated in _compute"


@pytest.mark.parametrize("name", MODULES)
def test_the_card_s_option_table_is_the_declarations(name):
    """The card lists its metrics' options in the table written from their declarations (``python -m
    capeval.hub.card_options``), and describes no option outside it: an option cannot be in the card and not in the
    code, or the other way round, or carry another default there."""
    import re

    from capeval.hub.card_options import END, START, card_families, options_table, refresh_card
    from capeval.registry import metric_options

    families = card_families(ROOT / "metrics" / name / f"{name}.py")
    if not families:
        pytest.skip(f"{name}: a module without metric options")
    text = (ROOT / "metrics" / name / "README.md").read_text(encoding="utf-8")
    assert refresh_card(text, families) == text, f"{name}: run python -m capeval.hub.card_options"
    table = text[text.index(START):text.index(END)]
    assert table.count("\n| `") == len({o for f in families for o in metric_options(f)})
    assert options_table(families) in table
    inputs = text.split("### Inputs", 1)[-1].split("\n#", 1)[0]  # the Inputs section: the keywords of compute
    outside = inputs.replace(table, "")
    from capeval.registry import REGISTRY

    known = {o for f in REGISTRY for o in metric_options(f)}
    bullets = set(re.findall(r"^- \*\*([a-z0-9_]+)\*\*", outside, flags=re.M))
    assert not bullets & known, f"{name}: options described by hand outside the table: {sorted(bullets & known)}"


# caption modules: the same numbers as capeval.score, with one reference string or a list per prediction
CAPTION_CASES = {
    "spice": (["a dog runs on the grass", "two cats on a red sofa"],
              [["a brown dog running on a lawn", "a dog sprints through a field"], "two cats sleeping on a red couch"]),
    "spice_u": (["a giraffe eating leaves from a tall tree", "a man on a bench"],
                [["a giraffe reaching up to eat from a tree", "a tall giraffe next to trees"],
                 "a man sitting on a park bench"]),
}


@pytest.mark.parametrize("name", sorted(CAPTION_CASES))
def test_caption_module_equals_capeval_score(name, java):
    import capeval

    needs(name)
    preds, refs = CAPTION_CASES[name]
    got = evaluate.load(str(ROOT / "metrics" / name)).compute(
        predictions=preds, references=[r if isinstance(r, list) else [r] for r in refs], tokenizer="ptb-java")
    want = capeval.score(preds, refs, metrics=[name], tokenizer="ptb-java")
    assert got[name] == want[name] and got["per_caption"] == want["per_caption"]
    assert got["signature"] == want["signature"]
    if name == "spice_u":
        assert "table=coco-train2014:82783img" in got["signature"]


@pytest.mark.parametrize("name", MODULES)
def test_script_doctests_pass_evaluates_harness(name, java):
    """The examples use the Hub ids (``evaluate.load("capeval/<name>")``) and pass the steps of evaluate's
    ``test_metric_common.py`` (no ELLIPSIS, ids mapped to the local folders)."""
    _needs(name, weights=True)  # the examples score with the shipped weights (the CLIP modules' scoring is +SKIP)
    assert run_module_doctests(name) >= 2
    script = (ROOT / "metrics" / name / f"{name}.py").read_text(encoding="utf-8")
    assert f'evaluate.load("capeval/{name}")' in script and 'evaluate.load("metrics/' not in script


@pytest.mark.parametrize("name", MODULES)
def test_card_doctest_blocks_run(name, java):
    _needs(name, weights=True)
    text = (ROOT / "metrics" / name / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if ">>>" in b]
    if not blocks:
        pytest.skip(f"the {name} card has no doctest blocks")
    parser, globs = doctest.DocTestParser(), {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with hub_ids_mapped():  # the blocks load the Hub id, evaluate.load("capeval/<name>")
        for k, block in enumerate(blocks):
            test = parser.get_doctest(block, globs, f"{name} README block {k}", name, 0)
            runner.run(test, clear_globs=False)
            globs.update(test.globs)  # DocTest copies its globals: carry names to the next block
    assert runner.failures == 0


@pytest.mark.parametrize("name", MODULES)
def test_script_has_one_import_per_line(name):
    for line in (ROOT / "metrics" / name / f"{name}.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("import "):
            assert "," not in line, line


@pytest.mark.parametrize("name", MODULES)
def test_space_app_builds_the_blocks(name, monkeypatch):
    """Each app.py builds gradio Blocks around its module, from any working directory, without launching."""
    gr = pytest.importorskip("gradio")
    _needs(name)
    monkeypatch.chdir("/")  # the app must find its script wherever it is started from
    app = runpy.run_path(str(ROOT / "metrics" / name / "app.py"), run_name="app")
    assert isinstance(app["demo"], gr.Blocks)
    assert "launch_gradio_widget" not in (ROOT / "metrics" / name / "app.py").read_text()  # breaks on gradio >= 4


@pytest.mark.parametrize("name", MODULES)
def test_evaluate_load_offline_in_a_fresh_process(name, tmp_path, java, request):
    """HF_HUB_OFFLINE is read when huggingface_hub is imported: check loading in a fresh interpreter (the CLIP
    modules with a tiny random checkpoint and noise images: their real weights are not available offline)."""
    _needs(name, weights=True)
    _, kwargs, key = MODULES[name]
    if name == "polos":
        tiny = request.getfixturevalue("tiny_polos")
        kwargs = kwargs.format(images=tiny["images"][:2], polos_model=tiny["polos_model"])
    elif name == "fleur":
        from capeval.io import example_images

        tiny = request.getfixturevalue("tiny_llava")
        kwargs = kwargs.format(images=[str(example_images()[0])], fleur_model=str(tiny["hf"]))
    elif name in VISION_MODULES:
        tiny = request.getfixturevalue("tiny_clip")
        kwargs = kwargs.format(images=tiny["images"][:2], clip_model=tiny["clip_model"], pac_model=tiny["pac_model"])
    elif name == "capture":
        from support.capture_module import PREDICTIONS, REFERENCES

        tiny = request.getfixturevalue("tiny_capture")
        kwargs = kwargs.format(predictions=PREDICTIONS, references=REFERENCES, **tiny)
    code = f"import evaluate, sys; m = evaluate.load(sys.argv[1]); print(repr(m.compute({kwargs})[{key!r}]))"
    env = {**os.environ, "HF_MODULES_CACHE": str(tmp_path / "modules"),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")])}
    if name == "capture":  # NLTK reads only the folders on its search path
        env["NLTK_DATA"] = tiny["nltk_data"]
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "metrics" / name)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    value = float(out.stdout.strip().splitlines()[-1])
    if name == "polos":  # a sigmoid
        assert 0.0 < value < 1.0
    elif name == "fleur":  # a smoothed 0.0-1.0 answer; NaN (no usable answer) fails here
        assert 0.0 <= value <= 1.0
    elif name == "capture":  # the first caption equals its reference (about 1), the second shares few elements
        assert 0.4 < value < 1.0
    elif name in VISION_MODULES:  # random weights: a negative cosine is clipped to 0; w = 2.5 (CLIP-S) or 2.0 (PAC-S)
        assert 0.0 <= value <= 2.5
    else:
        assert 0.0 < value <= 5.0
