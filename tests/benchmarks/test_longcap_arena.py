"""LongCap-Arena's loader on synthetic files of its two formats, written into ``tmp_path``: CaptionEvalKit's CSVs
(``<aspect>_<dci split>.csv``, candidate in ``mt`` or ``cand``, ``refs`` a Python list literal) and the Hub
dataset's parquet splits (``<dci split>.<aspect>``, columns ``file_name``, ``image``, ``refs``, ``cand``,
``score``): records, settings, the lookup order, images, item checks, Kendall tau-c."""
from __future__ import annotations

import csv
import math
import struct
import zlib
from pathlib import Path

import pytest
import scipy.stats

from capeval.hub_cli import download_command
from capeval.judgments.longcap_arena import load_longcap_arena

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
REPO = "Ka2ukiMatsuda/LongCap-Arena"
LONG = ("A wooden table stands in a bright kitchen.  On it   a white bowl of soup,\n a spoon to its right and "
        "a folded napkin beneath.")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    try:  # huggingface_hub reads HF_HUB_CACHE once, at import: its constant too
        from huggingface_hub import constants
    except ImportError:
        pass
    else:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def _png(shade: int) -> bytes:
    """A 1×1 grey PNG (no PIL needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes([0, shade]))) + chunk(b"IEND", b""))


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


#: CaptionEvalKit's CSV with ``mt``: (id, image, candidate, refs literal, score); row 2 has only empty references.
MT_ROWS = [
    ["7", "sa_1001", LONG, repr([LONG.upper(), "", "a kitchen  table with soup"]), "4.5"],
    ["8", "sa_1002.png", "a red bus   drives down a wet street", repr(["A red double-decker bus on a road."]), "2"],
    ["9", "sa_1003", "a plate of food", repr(["", "   "]), "3"],
    ["", "sa_1004", "two dogs play in the snow", repr(["Two dogs running in deep snow."]), "1.25"],
]


def _mt_csv(root: Path, folder: str = "longcap-arena", name: str = "desc_dci_test.csv") -> Path:
    return _write_csv(root / folder / name, ["id", "image", "mt", "refs", "score"], MT_ROWS)


def test_csv_with_mt_records_settings_and_images(tmp_path):
    path = _mt_csv(tmp_path)
    images = tmp_path / "longcap-arena" / "images"
    images.mkdir()
    (images / "sa_1001.jpg").write_bytes(_png(10))  # found with .jpg appended
    (images / "sa_1002.png").write_bytes(_png(20))  # found as named
    bench = load_longcap_arena(root=tmp_path)
    assert bench.name == "longcap-arena" and bench.statistic == "kendall_c"
    assert bench.settings == {"aspect": "desc", "split": "test"} and bench.files == [path]
    assert [r.source_id for r in bench.records] == ["dci_test.desc/0", "dci_test.desc/1", "dci_test.desc/3"]
    first = bench.records[0]
    assert first.benchmark == "longcap-arena" and first.category == "desc" and first.system is None
    assert first.candidate == " ".join(LONG.split())
    assert first.references == (" ".join(LONG.upper().split()), "a kitchen table with soup")
    assert first.human_scores == (4.5,) and first.image_id == "sa_1001"
    assert first.image_path == images / "sa_1001.jpg"
    assert first.extra == {"index": 0, "dci_split": "dci_test", "empty_references_dropped": 1, "id": "7"}
    assert bench.records[1].candidate == "a red bus drives down a wet street"
    assert bench.records[1].image_path == images / "sa_1002.png"
    last = bench.records[2]
    assert last.image_path is None and last.extra["id"] == "3"  # no id: the row's index
    assert bench.images() is None and bench.missing_images() == ["sa_1004"]
    assert bench.notes == [
        "read from longcap-arena/desc_dci_test.csv (csv): LongCap-Arena Test-B (DCI dci_test), descriptiveness "
        "judgments",
        "3 empty reference(s) dropped",
        "1 item(s) skipped: no non-empty reference (items[2])",
    ]


def test_csv_with_cand_in_a_captionevalkit_folder(tmp_path):
    rows = [["sa_2001.jpg", "a cat  sleeps on a sofa", "['A grey cat asleep on a sofa.']", "0.75"],
            ["sa_2002.jpg", "a man rides a bike", repr(["A cyclist on a road."]), "0.25"]]
    path = _write_csv(tmp_path / "LongCap-Arena" / "test" / "rel_dci_val.csv", ["imgid", "cand", "refs", "score"],
                      rows)
    images = tmp_path / "LongCap-Arena" / "images"
    images.mkdir()
    for name in ("sa_2001.jpg", "sa_2002.jpg"):
        (images / name).write_bytes(_png(30))
    bench = load_longcap_arena(tmp_path, aspect="relevance", split="test-a")
    assert bench.settings == {"aspect": "rel", "split": "validation"} and bench.files == [path]
    assert [r.candidate for r in bench.records] == ["a cat sleeps on a sofa", "a man rides a bike"]
    assert [r.image_id for r in bench.records] == ["sa_2001.jpg", "sa_2002.jpg"]
    assert [r.extra["id"] for r in bench.records] == ["sa_2001.jpg", "sa_2002.jpg"]  # imgid: also the id
    assert [r.source_id for r in bench.records] == ["dci_val.rel/0", "dci_val.rel/1"]
    assert bench.images() == [str(images / "sa_2001.jpg"), str(images / "sa_2002.jpg")]
    assert bench.notes == ["read from LongCap-Arena/test/rel_dci_val.csv (csv): LongCap-Arena Test-A (DCI dci_val), "
                           "relevance judgments"]
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "sa_2001.jpg").write_bytes(_png(40))
    moved = load_longcap_arena(tmp_path, aspect="rel", split="val", image_dir=other)
    assert [r.image_path for r in moved.records] == [other / "sa_2001.jpg", None]


def test_a_csv_without_an_image_column(tmp_path):
    _write_csv(tmp_path / "longcaparena" / "flu_dci_test.csv", ["mt", "refs", "score"],
               [["a fluent caption", "['a reference']", "5"]])
    bench = load_longcap_arena(tmp_path, aspect="flu")
    record = bench.records[0]
    assert record.image_id == "dci_test.flu/0" and record.image_path is None and record.extra["id"] == "0"
    assert bench.notes[1] == ("no image column (image, image_path, imgid): no image files, each image id is the "
                              "item's source id")


@pytest.mark.parametrize(("aspect", "split", "file_name"), [
    ("desc", "test", "desc_dci_test.csv"), ("Descriptiveness", "test-b", "desc_dci_test.csv"),
    ("rel", "testb", "rel_dci_test.csv"), ("fluency", "dci_test", "flu_dci_test.csv"),
    ("flu", "validation", "flu_dci_val.csv"), ("relevance", "val", "rel_dci_val.csv"),
    ("desc", "Test-A", "desc_dci_val.csv"), ("rel", "testa", "rel_dci_val.csv"),
    ("desc", "dci_val", "desc_dci_val.csv"),
])
def test_aspect_and_split_aliases(tmp_path, aspect, split, file_name):
    for name in ("desc", "rel", "flu"):
        for dci in ("dci_val", "dci_test"):
            _write_csv(tmp_path / "longcap-arena" / f"{name}_{dci}.csv", ["image", "mt", "refs", "score"],
                       [[f"{name}-{dci}", "a caption", "['a reference']", "1"]])
    bench = load_longcap_arena(tmp_path, aspect=aspect, split=split)
    assert bench.files == [tmp_path / "longcap-arena" / file_name]
    stem = file_name[:-4].split("_", 1)
    assert bench.records[0].image_id == f"{stem[0]}-{stem[1]}"
    assert bench.settings == {"aspect": stem[0], "split": "test" if stem[1] == "dci_test" else "validation"}


def test_unknown_aspect_or_split(tmp_path):
    with pytest.raises(ValueError) as err:
        load_longcap_arena(tmp_path, aspect="accuracy")
    assert str(err.value) == ("aspect must be one of desc, descriptiveness, rel, relevance, flu, fluency, got "
                              "'accuracy'.")
    with pytest.raises(ValueError) as err:
        load_longcap_arena(tmp_path, split="train")
    assert str(err.value) == ("split must be one of test, test-b, testb, dci_test, validation, val, test-a, testa, "
                              "dci_val, got 'train'.")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("score", "nan", '["score"] must be a finite number, got nan.'),
    ("score", "inf", '["score"] must be a finite number, got inf.'),
    ("score", "high", '["score"] must be a finite number, got the text \'high\'.'),
    ("refs", "[a dog", '["refs"] must be a list of references, got the text \'[a dog\'.'),
    ("refs", "'a dog runs'", '["refs"] must be a list of references, got str.'),
    ("refs", "['a dog', 3]", '["refs"][1] must be a string, got 3.'),
    ("mt", "   ", '["mt"] must be a non-empty caption, got \'   \'.'),
])
def test_malformed_rows_name_file_row_and_field(tmp_path, field, value, message):
    header = ["image", "mt", "refs", "score"]
    good = ["sa_1", "a caption", "['a reference']", "1"]
    bad = list(good)
    bad[header.index(field)] = value
    path = _write_csv(tmp_path / "longcap-arena" / "desc_dci_test.csv", header, [good, bad])
    with pytest.raises(ValueError) as err:
        load_longcap_arena(tmp_path)
    assert str(err.value) == f"{path}: items[1]{message}"


def test_a_csv_without_a_candidate_column(tmp_path):
    path = _write_csv(tmp_path / "longcap-arena" / "desc_dci_test.csv", ["image", "caption", "score"],
                      [["sa_1", "a caption", "1"]])
    with pytest.raises(ValueError) as err:
        load_longcap_arena(tmp_path)
    assert str(err.value) == (f"{path}: no column mt or cand, refs; expected CaptionEvalKit's CSV with columns mt "
                              "(or cand), refs (a Python list literal of strings), score, and the image's name in "
                              "image (or image_path, or imgid).")


def test_only_items_without_references(tmp_path):
    path = _write_csv(tmp_path / "longcap-arena" / "desc_dci_test.csv", ["mt", "refs", "score"],
                      [["a caption", "['']", "1"]])
    with pytest.raises(ValueError) as err:
        load_longcap_arena(tmp_path)
    assert str(err.value) == f"{path}: no item with a candidate and a non-empty reference."


#: Hub rows: (file name, candidate, references, score); the third has no reference.
HUB_ROWS = [
    ("sa_3001.jpg", "a long  description of a harbour", ["A harbour with boats.", "boats in a harbour"], 3.0),
    ("sa_3002.jpg", "a forest path\nin autumn", ["A path through an autumn forest."], 4.0),
    ("sa_3003.jpg", "an empty room", [], 2.0),
    ("sa_3004.jpg", "a city at night", ["City lights at night.", "  "], 1.0),
]


def _write_hub(folder: Path, shards: int = 1, rows=HUB_ROWS, name: str = "{:04d}.parquet") -> list[dict]:
    """The Hub split's rows as parquet shards in ``folder`` (``0000.parquet``...); returns the image values."""
    images = [{"bytes": _png(50 + i), "path": row[0]} for i, row in enumerate(rows)]
    folder.mkdir(parents=True, exist_ok=True)
    step = -(-len(rows) // shards)
    for k in range(shards):
        part = slice(k * step, (k + 1) * step)
        table = pa.table({"file_name": [r[0] for r in rows[part]], "image": pa.array(images[part], IMAGE),
                          "refs": pa.array([r[2] for r in rows[part]], pa.list_(pa.string())),
                          "cand": [r[1] for r in rows[part]],
                          "score": pa.array([r[3] for r in rows[part]], pa.float64())})
        pq.write_table(table, folder / name.format(k))
    return images


def test_hub_parquet_split_with_embedded_images(tmp_path):
    images = _write_hub(tmp_path / "longcap-arena" / "default" / "dci_test.flu")
    bench = load_longcap_arena(tmp_path, aspect="flu")
    shard = tmp_path / "longcap-arena" / "default" / "dci_test.flu" / "0000.parquet"
    assert bench.files == [shard] and bench.settings == {"aspect": "flu", "split": "test"}
    assert [r.source_id for r in bench.records] == ["dci_test.flu/0", "dci_test.flu/1", "dci_test.flu/3"]
    assert [r.image_id for r in bench.records] == ["sa_3001.jpg", "sa_3002.jpg", "sa_3004.jpg"]
    assert [r.candidate for r in bench.records] == ["a long description of a harbour", "a forest path in autumn",
                                                    "a city at night"]
    assert bench.records[2].references == ("City lights at night.",)
    assert [r.human_scores for r in bench.records] == [(3.0,), (4.0,), (1.0,)]
    assert all(r.image_path is None and r.category == "flu" and "id" not in r.extra for r in bench.records)
    assert bench.missing_images() == []
    assert bench.images() == [images[0], images[1], images[3]]
    assert bench.images()[0] == {"bytes": _png(50), "path": "sa_3001.jpg"}
    assert bench.notes == [
        "read from longcap-arena/default/dci_test.flu/0000.parquet (hub-parquet): LongCap-Arena Test-B (DCI "
        "dci_test), fluency judgments",
        "1 empty reference(s) dropped",
        "1 item(s) skipped: no non-empty reference (items[2])",
    ]


def test_hub_shards_in_the_split_folder_and_the_hub_cache(tmp_path):
    images = _write_hub(tmp_path / "longcaparena" / "dci_val.desc", shards=2)
    bench = load_longcap_arena(tmp_path, split="validation")
    assert bench.files == [tmp_path / "longcaparena" / "dci_val.desc" / f"{k:04d}.parquet" for k in (0, 1)]
    assert bench.images() == [images[0], images[1], images[3]]
    commit = "0123456789abcdef0123456789abcdef01234567"
    cache = tmp_path / "hub" / "datasets--Ka2ukiMatsuda--LongCap-Arena"
    (cache / "refs" / "refs" / "convert").mkdir(parents=True)
    (cache / "refs" / "refs" / "convert" / "parquet").write_text(commit)
    _write_hub(cache / "snapshots" / commit / "default" / "dci_test.rel")
    cached = load_longcap_arena(tmp_path, aspect="rel")
    assert cached.files == [cache / "snapshots" / commit / "default" / "dci_test.rel" / "0000.parquet"]
    assert cached.notes[0] == ("read from the Hugging Face hub cache of Ka2ukiMatsuda/LongCap-Arena (dci_test.rel) "
                               "(hub-cache): LongCap-Arena Test-B (DCI dci_test), relevance judgments")
    assert len(cached) == 3


def test_datasets_cache_is_read_offline_only(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"file_name": datasets.Value("string"), "image": datasets.Image(),
                                  "refs": datasets.Sequence(datasets.Value("string")), "cand": datasets.Value("string"),
                                  "score": datasets.Value("float64")})
    ds = datasets.Dataset.from_dict({"file_name": [r[0] for r in HUB_ROWS],
                                     "image": [{"bytes": _png(i), "path": r[0]} for i, r in enumerate(HUB_ROWS)],
                                     "refs": [r[2] for r in HUB_ROWS], "cand": [r[1] for r in HUB_ROWS],
                                     "score": [r[3] for r in HUB_ROWS]}, features=features)
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda repo, split: calls.append((repo, split)) or ds)
    with pytest.raises(FileNotFoundError, match="not read: online, load_dataset would download it"):
        load_longcap_arena(tmp_path)
    assert calls == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bench = load_longcap_arena(tmp_path, aspect="fluency", split="val")
    assert calls == [(REPO, "dci_val.flu")] and bench.files == []
    assert [r.image_id for r in bench.records] == ["sa_3001.jpg", "sa_3002.jpg", "sa_3004.jpg"]
    assert [im["bytes"] for im in bench.images()] == [_png(i) for i in (0, 1, 3)]
    assert bench.notes[0] == ("read from the Hugging Face datasets cache of Ka2ukiMatsuda/LongCap-Arena (dci_val.flu) "
                              "(datasets-cache): LongCap-Arena Test-A (DCI dci_val), fluency judgments")


def test_the_csv_comes_before_the_parquet_split(tmp_path):
    _write_hub(tmp_path / "longcap-arena" / "dci_test.desc")
    path = _mt_csv(tmp_path, folder="LongCap-Arena")  # CaptionEvalKit's folder name, still before the shards
    assert load_longcap_arena(tmp_path).files == [path]


def test_malformed_parquet_rows(tmp_path):
    folder = tmp_path / "longcap-arena" / "dci_test.desc"
    _write_hub(folder, rows=[HUB_ROWS[0], ("sa_9.jpg", "a caption", ["a reference"], math.nan)])
    with pytest.raises(ValueError) as err:
        load_longcap_arena(tmp_path)
    assert str(err.value) == f'{folder / "0000.parquet"}: items[1]["score"] must be a finite number, got nan.'
    pq.write_table(pa.table({"file_name": ["a.jpg"], "refs": [["r"]], "cand": ["c"], "score": [1.0]}),
                   folder / "0000.parquet")
    with pytest.raises(ValueError) as err:
        load_longcap_arena(tmp_path)
    assert str(err.value) == f"{folder / '0000.parquet'}: no column 'image'; it has file_name, refs, cand, score."


def test_nothing_found_names_every_place_and_the_command(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        load_longcap_arena(tmp_path, aspect="rel", split="test-a")
    places = []
    for folder in ("longcap-arena", "longcaparena", "LongCap-Arena"):
        places += [str(tmp_path / folder / "rel_dci_val.csv"), str(tmp_path / folder / "test" / "rel_dci_val.csv")]
    for folder in ("longcap-arena", "longcaparena", "LongCap-Arena"):
        places += [str(tmp_path / folder / pattern) for pattern in (
            "dci_val.rel/*.parquet", "default/dci_val.rel/*.parquet", "data/dci_val.rel-*.parquet",
            "dci_val.rel-*.parquet")]
    places += [f"the Hugging Face hub cache of {REPO}, revision refs/convert/parquet (not cached "
               "(LocalEntryNotFoundError))",
               f"the Hugging Face hub cache of {REPO}, revision main (not cached (LocalEntryNotFoundError))",
               f"the datasets cache of {REPO} (not read: online, load_dataset would download it; set "
               "HF_HUB_OFFLINE=1 to read the cache)"]
    command = download_command(f"{REPO} --revision refs/convert/parquet", repo_type="dataset",
                               local_dir=str(tmp_path / "longcap-arena"))
    assert command.endswith(f"hf download --repo-type dataset {REPO} --revision refs/convert/parquet --local-dir "
                            f"{tmp_path / 'longcap-arena'}")
    assert str(err.value) == (
        f"{places[0]} not found; expected CaptionEvalKit's CSV with columns mt (or cand), refs (a Python list "
        "literal of strings), score, and the image's name in image (or image_path, or imgid). Also looked for: "
        f"{'; '.join(places[1:])}. Fetch the Hub dataset's parquet splits (dci_val.rel: parquet columns file_name, "
        "image (a datasets Image), refs (a list of strings), cand, score): "
        f"`{command}`, or put CaptionEvalKit's rel_dci_val.csv at {places[0]}.")


def test_kendall_tau_c_against_the_human_scores(tmp_path):
    _mt_csv(tmp_path)
    bench = load_longcap_arena(tmp_path)
    metric = [0.9, 0.1, 0.3]
    result = bench.evaluate(metric)
    human = [r.human_scores[0] for r in bench.records]
    assert result["statistic"] == "kendall_c" and result["rows"] == 3
    assert result["value"] == pytest.approx(scipy.stats.kendalltau(human, metric, variant="c")[0])
