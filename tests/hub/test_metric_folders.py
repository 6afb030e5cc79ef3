"""`capeval hub build-space` / `build-metric`: folders exactly as the Hub needs them, loadable offline."""
from __future__ import annotations


import pytest
import yaml
from support import ROOT, needs

from capeval._version import __version__
from capeval.cli import main
from capeval.hub.metric_folder import GRADIO_VERSION, build_metric_folder, metric_names
from capeval.hub.push import check_module_folder, push_module_folder

evaluate = pytest.importorskip("evaluate")

# name -> compute() keywords (cheap: no METEOR JVM)
COMPUTE = {
    "coco_caption": dict(predictions=["A dog runs.", "a cat sleeps"], references=[["A dog runs fast."], ["a cat"]],
                         metrics="bleu_1,rouge_l,cider_d"),
    "spice": dict(predictions=["A dog runs."], references=[["A dog runs fast."]]),
    "spice_u": dict(predictions=["A dog runs."], references=[["A dog runs fast."]]),
    "thumb": dict(precision=[5, 3], recall=[4, 3], fluency=[-0.1, 0], bootstrap_samples=0),
    # + the tiny critics' folders (fixture tiny_critics) and, for critic, the bundled photos
    "learned_critic": dict(predictions=["a cat looking at the camera", "an astronaut in an orange suit"],
                           references=[["a cat with stripes"], ["a woman in a space suit", "an astronaut"]],
                           metrics="critic,critic_ref"),
    # the released layer (shipped): the retrained network is tested in tests/evaluate_modules/test_lceval.py
    "lceval": dict(predictions=["a dog runs on the grass", "two cats on a sofa"],
                   references=[["a brown dog running on a lawn"], ["two cats sleeping on a couch", "cats on a sofa"]],
                   metrics="lceval_released"),
    "sentence_cosine": dict(predictions=["a dog runs on the grass", "two cats on a sofa"],
                            references=[["a brown dog running on a lawn"], ["two cats sleeping on a couch"]]),
    # + a tiny random CLIP checkpoint and two noise images (fixture tiny_clip_checkpoints): no real weights offline
    "clip_score": dict(predictions=["a dog runs on the grass", "two cats on a sofa"],
                       references=[["a brown dog running on a lawn"], ["two cats sleeping on a couch", "cats"]]),
    "pac_score": dict(predictions=["a dog runs on the grass", "two cats on a sofa"],
                      references=[["a brown dog running on a lawn"], ["two cats sleeping on a couch", "cats"]]),
    # + a tiny Polos checkpoint in the released layout (fixture tiny_polos_checkpoint)
    "polos": dict(predictions=["a dog runs on the grass", "two cats on a sofa"],
                  references=[["a brown dog running on a lawn"], ["two cats sleeping on a couch", "cats"]]),
    # + the tiny LLaVA-1.5 (fixture tiny_llava) and the bundled cat and coffee photos; captions of the tiny model's
    # training text, so every answer gives a number (a NaN would make the two results unequal)
    "fleur": dict(predictions=["a tabby cat looking at the camera", "a cup of coffee on a saucer"],
                  references=[["a cat with grey stripes"], ["a cup of coffee on a saucer with a spoon"]]),
    # + the tiny parser and phrase encoder and NLTK's data (fixture tiny_capture_models); captions the tiny parser
    # was fitted to, so that their graphs have objects, attributes and relations
    "capture": dict(predictions=["A brown dog runs on the green grass.", "Two cats sleep on a red blanket."],
                    references=[["A brown dog runs on the green grass."], ["A small bird sits on a branch."]]),
}
#: The modules that need the torch stack (capeval[learned]) and read a CLIP checkpoint.
LEARNED = ("learned_critic", "sentence_cosine", "clip_score", "pac_score", "polos")
#: The modules whose judge is a multimodal LLM (capeval[judges]: the torch stack and sentencepiece).
JUDGES = ("fleur",)


@pytest.fixture(scope="module")
def tiny_clip_checkpoints(tmp_path_factory) -> dict:
    """A tiny random OpenAI-format CLIP checkpoint as clip_model and pac_model (PAC-S's format), and two noise PNGs."""
    from support.clip_reference import tiny_checkpoints

    return tiny_checkpoints(tmp_path_factory.mktemp("tiny-clip"), images=2, same_model=True)


@pytest.fixture(scope="module")
def tiny_polos_checkpoint(tmp_path_factory) -> dict:
    """A tiny Polos checkpoint in the released layout and two noise PNGs (:func:`support.polos_reference.tiny_polos`)."""
    from support.polos_reference import tiny_polos

    return tiny_polos(tmp_path_factory.mktemp("tiny-polos"), images=2)


@pytest.fixture(scope="module")
def tiny_capture_models(tmp_path_factory) -> dict:
    """The tiny capture parser and phrase encoder and NLTK's data (:func:`support.capture_module.tiny_capture`)."""
    from support.capture_module import tiny_capture

    return tiny_capture(tmp_path_factory.mktemp("tiny-capture"))


def _compute_kwargs(name: str, request) -> dict:
    """COMPUTE[name], with the learned critic's tiny critic folders and images (nothing shipped is needed); LCEval's
    METEOR feature needs Java (skip without it); capture's NLTK data on NLTK's search path for the test."""
    kwargs = dict(COMPUTE[name])
    if name == "lceval":
        request.getfixturevalue("java")
    if name == "learned_critic":
        from capeval.io import example_images

        kwargs.update(request.getfixturevalue("tiny_critics"), images=[str(p) for p in example_images()[:2]])
    if name in ("clip_score", "pac_score"):
        tiny = request.getfixturevalue("tiny_clip_checkpoints")
        option = "clip_model" if name == "clip_score" else "pac_model"
        kwargs.update({option: tiny[option], "images": tiny["images"]})
    if name == "polos":
        tiny = request.getfixturevalue("tiny_polos_checkpoint")
        kwargs.update(polos_model=tiny["polos_model"], images=tiny["images"])
    if name == "fleur":
        from capeval.io import example_images

        photos = example_images()
        kwargs.update(fleur_model=str(request.getfixturevalue("tiny_llava")["hf"]),
                      images=[str(photos[0]), str(photos[2])])
    if name == "capture":
        from support.capture_module import nltk_data_on_path

        tiny = request.getfixturevalue("tiny_capture_models")
        nltk_data_on_path(request.getfixturevalue("monkeypatch"), tiny["nltk_data"])
        kwargs.update(capture_parser=tiny["capture_parser"], capture_text_encoder=tiny["capture_text_encoder"],
                      capture_device="cpu")
    return kwargs


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


def test_every_metric_folder_is_covered():
    assert metric_names() == sorted(COMPUTE)


def _front_matter(path):
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


@pytest.mark.parametrize("name", sorted(COMPUTE))
def test_build_space_loads_and_scores_like_the_source(name, tmp_path, request):
    needs(name)
    out = tmp_path / f"capeval-{name}"
    built = build_metric_folder(name, out, kind="space", hub_id=f"someone/capeval-{name}")
    expected = {f"capeval-{name}.py", "README.md", "requirements.txt", "app.py"}  # no packages.txt: no Java
    assert {p.name for p in out.iterdir()} == expected == set(built.files)
    meta = _front_matter(out / "README.md")
    assert meta["license"] == "apache-2.0" and meta["homepage"].startswith("https://")
    assert meta["sdk"] == "gradio" and meta["sdk_version"] == GRADIO_VERSION and meta["app_file"] == "app.py"
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f'evaluate.load("someone/capeval-{name}")' in card and f'evaluate.load("metrics/{name}")' in card
    assert "capeval/" + name + '")' not in card  # no Hub id that does not exist
    reqs = (out / "requirements.txt").read_text().split()
    assert reqs[0].startswith("capeval[evaluate") and reqs[0].endswith(f"=={__version__}")
    assert ("learned" in reqs[0]) == (name in LEARNED)  # torch only where needed
    assert ("judges" in reqs[0]) == (name in JUDGES)
    assert f"gradio=={GRADIO_VERSION}" in reqs
    assert (out / f"capeval-{name}.py").read_text() == (ROOT / "metrics" / name / f"{name}.py").read_text()
    built_module = evaluate.load(str(out))
    source_module = evaluate.load(str(ROOT / "metrics" / name))
    kwargs = _compute_kwargs(name, request)
    got, want = built_module.compute(**kwargs), source_module.compute(**kwargs)
    assert got == want and got
    assert check_module_folder(out, f"someone/capeval-{name}") == "space"
    try:
        import gradio
    except ImportError:
        return
    import runpy

    app = runpy.run_path(str(out / "app.py"), run_name="app")  # the Space's app finds the renamed script
    assert isinstance(app["demo"], gradio.Blocks)


def test_build_metric_has_no_space_parts(tmp_path):
    out = tmp_path / "thumb"
    build_metric_folder("thumb", out, kind="metric")
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "requirements.txt", "thumb.py"]
    meta = _front_matter(out / "README.md")
    assert "sdk" not in meta and "app_file" not in meta and meta["license"] == "apache-2.0"
    assert "gradio" not in (out / "requirements.txt").read_text()
    assert evaluate.load(str(out)).compute(**COMPUTE["thumb"])["total"] is not None
    assert check_module_folder(out) == "metric"


def test_build_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="unknown metric module 'bleurt'.*coco_caption"):
        build_metric_folder("bleurt", tmp_path / "x")
    with pytest.raises(ValueError, match="must be the Hub repo name 'other'"):
        build_metric_folder("thumb", tmp_path / "thumb", hub_id="me/other")
    build_metric_folder("thumb", tmp_path / "thumb")
    with pytest.raises(FileExistsError, match="not empty"):
        build_metric_folder("thumb", tmp_path / "thumb")
    with pytest.raises(ValueError, match="has no other.py"):
        check_module_folder(tmp_path / "thumb", "me/other")


def test_push_offline_is_a_clear_error(tmp_path, monkeypatch):
    out = tmp_path / "thumb"
    build_metric_folder("thumb", out, kind="space")
    with pytest.raises(RuntimeError, match="HF_HUB_OFFLINE is set"):
        push_module_folder(out, "someone/thumb", token="hf_dummy")
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(RuntimeError, match="cannot reach http://127.0.0.1:9"):  # a closed local port
        push_module_folder(out, "someone/thumb", token="hf_dummy", endpoint="http://127.0.0.1:9")


def test_cli_builds_the_learned_critic_folders(tmp_path, capsys, tiny_critics):
    """`capeval hub build-metric learned_critic` / `build-space`: loadable offline, scoring with a tiny critic."""
    for kind in ("metric", "space"):
        out = tmp_path / kind / "learned_critic"
        assert main(["hub", f"build-{kind}", "learned_critic", "--out", str(out)]) == 0
        assert f"{kind} folder" in capsys.readouterr().out
        files = {"learned_critic.py", "README.md", "requirements.txt"} | ({"app.py"} if kind == "space" else set())
        assert {p.name for p in out.iterdir()} == files
        assert check_module_folder(out) == kind
        got = evaluate.load(str(out)).compute(predictions=["a dog runs"], references=[["a dog is running"]],
                                              critic_ref_model=tiny_critics["critic_ref_model"])
        assert set(got["per_caption"]) == {"critic_ref"} and 0 <= got["critic_ref"] <= 1
    card = (tmp_path / "space" / "learned_critic" / "README.md").read_text(encoding="utf-8")
    assert "Cui" in card and "## Loading" in card and "homepage: https://arxiv.org/abs/1806.06422" in card


def test_cli_build_space_and_push(tmp_path, capsys):
    out = tmp_path / "thumb"
    assert main(["hub", "build-space", "thumb", "--out", str(out)]) == 0
    assert "space folder" in capsys.readouterr().out and (out / "app.py").is_file()
    assert main(["hub", "push", str(out), "--repo-id", "me/thumb", "--token", "hf_dummy"]) == 1
    assert "HF_HUB_OFFLINE is set" in capsys.readouterr().err
    assert main(["hub", "build-metric", "nope", "--out", str(tmp_path / "nope")]) == 1
    assert "unknown metric module 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(COMPUTE))
def test_source_folders_pin_what_the_build_writes(name):
    """metrics/<name>/requirements.txt and the card's sdk_version are the built Space's (one gradio pin)."""
    from capeval.hub.metric_folder import requirements

    assert (ROOT / "metrics" / name / "requirements.txt").read_text().split() == requirements(name, "space")
    assert _front_matter(ROOT / "metrics" / name / "README.md")["sdk_version"] == GRADIO_VERSION
    assert _front_matter(ROOT / "metrics" / name / "README.md")["license"] == "apache-2.0"
    from capeval.hub.metric_folder import APT_PACKAGES

    assert APT_PACKAGES == {}  # METEOR runs in Python: no Space needs Java or any other apt package
    assert not (ROOT / "metrics" / name / "packages.txt").exists()
    setup = (ROOT / "setup.cfg").read_text()
    assert f"gradio=={GRADIO_VERSION}" in setup  # the `space` extra the tests install
