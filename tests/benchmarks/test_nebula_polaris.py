"""Nebula and Polaris: the EXPERT JSON, the authors' CSV and the Hub datasets' parquet shards, the lookup order,
item checks, Kendall tau-c and ``capeval bench`` end to end.

Self-made fixtures in the original formats: ``tests/fixtures/nebula/nebula_test.json`` (EXPERT's layout, with empty
references and one item that has none left), ``tests/fixtures/polaris/polaris_val.csv`` (the Polos release's
layout); the Hub parquet shards (with a PNG ``Image`` column) are written into ``tmp_path`` by :func:`_write_hub`.
"""
from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import capeval
from capeval.judgments import load_benchmark, stats
from capeval.meta_evaluation.contamination import contamination
from capeval.meta_evaluation.harness import _Scorer, run_benchmark
from capeval.meta_evaluation.leaderboard import build_leaderboard
from capeval.meta_evaluation.report import render
from capeval.cli import main

from support import FIXTURES

pq = pytest.importorskip("pyarrow.parquet")
pa = pytest.importorskip("pyarrow")

NEBULA_JSON = FIXTURES / "nebula" / "nebula_test.json"
POLARIS_CSV = FIXTURES / "polaris" / "polaris_val.csv"
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def _png(shade: int) -> bytes:
    """A 1×1 grey PNG (no PIL needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes([0, shade]))) + chunk(b"IEND", b""))


#: Hub rows: (image file name, candidate, references, human score); the fourth has only empty references.
HUB_ROWS = [
    ("img_a.png", "a dog runs on the grass", ["A dog running on green grass.", "a brown dog runs in a field", ""], 0.9),
    ("img_a.png", "a cat sleeps on a sofa", ["A dog running on green grass.", "a brown dog runs in a field"], 0.1),
    ("img_b.png", "a man rides a bike on a road", ["A man riding a bicycle down the road.", "a cyclist on a road"],
     0.8),
    ("img_c.png", "a plate of food", ["", "  "], 0.5),
    ("img_c.png", "a bowl of soup on a table", ["A bowl of hot soup on a wooden table.", "soup in a white bowl"],
     0.7),
    ("img_b.png", "a bus on a street", ["A man riding a bicycle down the road.", "a cyclist on a road"], 0.2),
]


def _write_hub(folder: Path, name: str, split: str, shards: int = 2) -> list[bytes]:
    """``<folder>/data/<split>-0000i-of-0000n.parquet`` with ``name``'s card columns; returns each row's PNG."""
    pngs = [_png(40 * (ord(row[0][4]) - ord("a"))) for row in HUB_ROWS]
    images = [{"bytes": png, "path": row[0]} for png, row in zip(pngs, HUB_ROWS)]
    columns = {
        "nebula": {"file_name": [r[0] for r in HUB_ROWS], "image": pa.array(images, IMAGE),
                   "refs": [r[2] for r in HUB_ROWS], "mt": [r[1] for r in HUB_ROWS],
                   "human_score": pa.array([r[3] for r in HUB_ROWS], pa.float64())},
        "polaris": {"refs": [r[2] for r in HUB_ROWS], "cand": [r[1] for r in HUB_ROWS], "img": pa.array(images, IMAGE),
                    "human_score": pa.array([r[3] for r in HUB_ROWS], pa.float32())},
    }[name]
    table = pa.table(columns)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    step = -(-len(HUB_ROWS) // shards)
    for k in range(shards):
        pq.write_table(table.slice(k * step, step), folder / "data" / f"{split}-{k:05d}-of-{shards:05d}.parquet")
    return pngs


# -- the EXPERT JSON and the CSV -----------------------------------------------------------------------------------
def test_expert_json_items():
    bench = load_benchmark("nebula", FIXTURES)
    raw = json.loads(NEBULA_JSON.read_text())
    assert bench.name == "nebula" and bench.statistic == "kendall_c"
    assert bench.settings == {"split": "test", "source": "expert-json", "scores": "original"}
    assert len(raw) == 9 and len(bench) == 8  # items[5] has only empty references: skipped
    assert [r.source_id for r in bench.records] == [f"test/{i}" for i in (0, 1, 2, 3, 4, 6, 7, 8)]
    assert bench.records[0].image_id == raw[0]["imgid"]
    assert bench.candidates()[4] == "a man reading a book on a bench"  # whitespace runs collapsed
    assert bench.references()[1] == ["Two kids kick a ball in a grassy park.",
                                     "Two young children chase a ball on the lawn.",
                                     "a pair of children in a park with a ball"]  # "", "   ", "" dropped
    assert [len(r) for r in bench.references()] == [5, 3, 8, 5, 5, 5, 5, 5]
    assert all(ref and ref == ref.strip() for refs in bench.references() for ref in refs)
    assert [r.human_scores for r in bench.records][:3] == [(1.0,), (0.75,), (0.55,)]
    assert any("items[5]" in n and "1 item(s) skipped" in n for n in bench.notes)
    assert any("empty reference(s) dropped" in n for n in bench.notes)
    assert any("3,298" in n for n in bench.notes)  # the fixture is not the released file
    assert bench.images() is None and bench.missing_images()[0] == raw[0]["imgid"]


def test_tau_c_is_scipys_over_all_items():
    bench = load_benchmark("nebula", FIXTURES)
    metric = np.linspace(0.0, 1.0, len(bench))[::-1] ** 2
    human = [r.human_scores[0] for r in bench.records]
    result = bench.evaluate(metric)
    expected = scipy.stats.kendalltau(human, metric, variant="c").statistic
    assert result["statistic"] == "kendall_c" and result["rows"] == result["items"] == len(bench)
    assert result["value"] == pytest.approx(expected, abs=1e-12)
    assert result["value"] == stats.kendall_tau(human, metric, "c")


def test_authors_csv_and_split_names():
    bench = load_benchmark("polaris", FIXTURES, split="val")
    assert bench.settings == {"split": "validation", "source": "csv"}
    assert load_benchmark("polaris", FIXTURES, split="valid").candidates() == bench.candidates()
    assert bench.candidates()[0] == "a boat sailing on a calm lake"
    assert bench.references()[0][-1] == "A white sailboat on a quiet lake."  # CSV list literal; "" dropped
    assert bench.references()[1][-1] == "Someone skiing fast in the snow."
    assert bench.records[0].human_scores == (0.7916666666666666,)
    assert bench.records[0].image_id == "b0a7b0a7b0a7b0a7b0a7b0a7b0a7b0a7.jpg"
    with pytest.raises(ValueError, match="split must be one of train, validation, valid, val, test"):
        load_benchmark("polaris", FIXTURES, split="dev")


def test_expert_images_are_found_by_imgid(tmp_path):
    shutil.copy(NEBULA_JSON, (tmp_path / "nebula").mkdir() or tmp_path / "nebula" / "nebula_test.json")
    bench = load_benchmark("nebula", tmp_path)
    (tmp_path / "nebula" / "images").mkdir()
    for i, record in enumerate(bench.records):
        suffix = ".png" if i == 2 else ".jpg"
        (tmp_path / "nebula" / "images" / f"{record.image_id}{suffix}").write_bytes(_png(i))
    bench = load_benchmark("nebula", tmp_path)
    assert bench.images() == [str(tmp_path / "nebula" / "images" / f"{r.image_id}{'.png' if i == 2 else '.jpg'}")
                              for i, r in enumerate(bench.records)]
    assert bench.counts()["images_available"] == len(bench)
    (tmp_path / "nebula" / "images" / f"{bench.records[3].image_id}.jpg").unlink()
    bench = load_benchmark("nebula", tmp_path)
    assert bench.images() is None and bench.missing_images() == [bench.records[3].image_id]


# -- the Hub datasets ----------------------------------------------------------------------------------------------
def test_hub_parquet_nebula(tmp_path):
    pngs = _write_hub(tmp_path / "nebula", "nebula", "test")
    bench = load_benchmark("nebula", tmp_path)
    assert bench.settings == {"split": "test", "source": "hub-parquet", "scores": "original"}
    assert len(bench) == 5 and [r.extra["index"] for r in bench.records] == [0, 1, 2, 4, 5]
    assert bench.candidates() == [HUB_ROWS[i][1] for i in (0, 1, 2, 4, 5)]
    assert bench.references()[0] == ["A dog running on green grass.", "a brown dog runs in a field"]
    assert [r.image_id for r in bench.records] == ["img_a.png", "img_a.png", "img_b.png", "img_c.png", "img_b.png"]
    assert bench.counts() == {"items": 5, "images": 3, "images_available": 3, "judgments": 5}
    images = bench.images()
    assert [im["bytes"] for im in images] == [pngs[i] for i in (0, 1, 2, 4, 5)]  # the kept rows' images, in order
    assert images[0]["path"] == "img_a.png" and bench.missing_images() == []
    assert len(bench.files) == 2 and any("item(s) skipped" in n for n in bench.notes)


def test_hub_parquet_polaris_validation(tmp_path):
    pngs = _write_hub(tmp_path / "polaris", "polaris", "validation", shards=3)
    bench = load_benchmark("polaris", tmp_path, split="validation")
    assert bench.settings == {"split": "validation", "source": "hub-parquet"}
    assert [r.image_id for r in bench.records] == ["img_a.png", "img_a.png", "img_b.png", "img_c.png", "img_b.png"]
    assert bench.records[0].human_scores == (pytest.approx(0.9),)  # float32 on the Hub
    assert [im["bytes"] for im in bench.images()] == [pngs[i] for i in (0, 1, 2, 4, 5)]
    with pytest.raises(FileNotFoundError, match=r"polaris_test\.json not found"):
        load_benchmark("polaris", tmp_path)  # the test split is not there


def test_lookup_order_prefers_the_expert_json(tmp_path):
    _write_hub(tmp_path / "nebula", "nebula", "test")
    assert load_benchmark("nebula", tmp_path).settings["source"] == "hub-parquet"
    shutil.copy(NEBULA_JSON, tmp_path / "nebula" / "nebula_test.json")
    assert load_benchmark("nebula", tmp_path).settings["source"] == "expert-json"


def test_datasets_cache_is_read_offline_only(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    (tmp_path / "polaris").mkdir()
    pngs = [_png(10 * i) for i in range(len(HUB_ROWS))]
    features = datasets.Features({"refs": datasets.Sequence(datasets.Value("string")), "cand": datasets.Value("string"),
                                  "img": datasets.Image(), "human_score": datasets.Value("float32")})
    ds = datasets.Dataset.from_dict({"refs": [r[2] for r in HUB_ROWS], "cand": [r[1] for r in HUB_ROWS],
                                     "img": [{"bytes": p, "path": r[0]} for p, r in zip(pngs, HUB_ROWS)],
                                     "human_score": [r[3] for r in HUB_ROWS]}, features=features)
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda repo, split: calls.append((repo, split)) or ds)
    with pytest.raises(FileNotFoundError, match="not read: online, load_dataset would download it"):
        load_benchmark("polaris", tmp_path)
    assert calls == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bench = load_benchmark("polaris", tmp_path)
    assert calls == [("yuwd/Polaris", "test")] and bench.settings["source"] == "datasets-cache"
    assert bench.candidates() == [HUB_ROWS[i][1] for i in (0, 1, 2, 4, 5)]
    assert [r.image_id for r in bench.records][:3] == ["img_a.png", "img_a.png", "img_b.png"]
    assert [im["bytes"] for im in bench.images()] == [pngs[i] for i in (0, 1, 2, 4, 5)]


# -- errors --------------------------------------------------------------------------------------------------------
def test_missing_files_name_every_place(tmp_path):
    from capeval.hub_cli import installed_cli

    (tmp_path / "nebula").mkdir()
    with pytest.raises(FileNotFoundError) as err:
        load_benchmark("nebula", tmp_path)
    text = str(err.value)
    assert text.startswith(f"{tmp_path / 'nebula' / 'nebula_test.json'} not found; expected EXPERT's annotation file")
    for place in ("nebula_test.csv", "data/test-*.parquet", "test-*.parquet", "hub cache of Ka2ukiMatsuda/Nebula",
                  "datasets cache of Ka2ukiMatsuda/Nebula",
                  f"{installed_cli()} download --repo-type dataset Ka2ukiMatsuda/Nebula"):
        assert place in text, place
    with pytest.raises(FileNotFoundError, match=r"polaris_val\.json not found.*polaris_valid\.csv.*"
                                                r"data/validation-\*\.parquet.*yuwd/Polaris") as err:
        load_benchmark("polaris", tmp_path, split="validation")
    assert "nebula" not in str(err.value)  # polaris's error names polaris's files only


def _write_items(tmp_path: Path, items) -> Path:
    folder = tmp_path / "nebula"
    folder.mkdir(exist_ok=True)
    (folder / "nebula_test.json").write_text(json.dumps(items))
    return tmp_path


@pytest.mark.parametrize("index,field,value,message", [
    (2, "score", 1.5, r'items\[2\]\["score"\] must be a number in \[0, 1\], got 1.5'),
    (1, "score", "high", r'items\[1\]\["score"\] must be a number in \[0, 1\], got the text'),
    (3, "score", True, r'items\[3\]\["score"\] must be a number'),
    (0, "score", float("nan"), r'items\[0\]\["score"\] must be a number in \[0, 1\], got nan'),
    (4, "refs", "a dog", r'items\[4\]\["refs"\] must be a list of references, got the text'),
    (4, "refs", {"a": 1}, r'items\[4\]\["refs"\] must be a list of references, got dict'),
    (2, "refs", ["a dog", 7], r'items\[2\]\["refs"\]\[1\] must be a string, got 7'),
    (6, "mt", "   ", r'items\[6\]\["mt"\] must be a non-empty caption'),
    (1, "imgid", None, r'items\[1\]\["imgid"\] must name an image'),
])
def test_malformed_item_names_index_and_field(tmp_path, index, field, value, message):
    items = json.loads(NEBULA_JSON.read_text())
    items[index][field] = value
    with pytest.raises(ValueError, match=message) as err:
        load_benchmark("nebula", _write_items(tmp_path, items))
    assert "nebula_test.json" in str(err.value)


def test_malformed_file_shapes(tmp_path):
    items = json.loads(NEBULA_JSON.read_text())
    del items[3]["mt"]
    with pytest.raises(ValueError, match=r'items\[3\] has no field "mt"'):
        load_benchmark("nebula", _write_items(tmp_path, items))
    with pytest.raises(ValueError, match=r"items\[0\] is a str"):
        load_benchmark("nebula", _write_items(tmp_path, ["a dog"]))
    with pytest.raises(ValueError, match="got a JSON dict"):
        load_benchmark("nebula", _write_items(tmp_path, {"items": []}))
    with pytest.raises(ValueError, match="no item with a candidate and a non-empty reference"):
        load_benchmark("nebula", _write_items(tmp_path, [{"imgid": "x", "mt": "a dog", "refs": [""], "score": 0.5}]))
    (tmp_path / "polaris").mkdir()
    (tmp_path / "polaris" / "polaris_test.csv").write_text("mt,refs,score\na dog,\"['a dog']\",0.5\n")
    with pytest.raises(ValueError, match="no column imgid"):
        load_benchmark("polaris", tmp_path)
    (tmp_path / "polaris" / "polaris_test.csv").write_text("mt,refs,score,imgid\na dog,\"['a dog'\",0.5,x\n")
    with pytest.raises(ValueError, match=r'polaris_test\.csv: items\[0\]\["refs"\] must be a list of references'):
        load_benchmark("polaris", tmp_path)


def test_hub_shard_without_a_card_column(tmp_path):
    (tmp_path / "polaris" / "data").mkdir(parents=True)
    pq.write_table(pa.table({"refs": [["a dog"]], "mt": ["a dog"], "score": [0.5]}),
                   tmp_path / "polaris" / "data" / "test-00000-of-00001.parquet")
    with pytest.raises(ValueError, match=r"test-00000-of-00001\.parquet: no column 'cand', 'human_score', 'img'"):
        load_benchmark("polaris", tmp_path)


# -- capeval bench ---------------------------------------------------------------------------------------------------
def test_bench_cli_tau_c_is_score_per_caption_tau_c(tmp_path, monkeypatch, capsys):
    """The issue's check, on the fixture: ``capeval bench nebula --metrics cider_d`` reports the tau-c that
    ``capeval.score``'s per-caption CIDEr-D gives on the same items."""
    (tmp_path / "data" / "nebula").mkdir(parents=True)
    shutil.copy(NEBULA_JSON, tmp_path / "data" / "nebula" / "nebula_test.json")
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "nebula.json"
    assert main(["bench", "nebula", "--metrics", "cider_d", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    entry = payload["results"]["cider_d"]
    bench = load_benchmark("nebula")
    per_caption = capeval.score(bench.candidates(), bench.references(), metrics="cider_d")["per_caption"]["cider_d"]
    human = [r.human_scores[0] for r in bench.records]
    assert entry["tau_c"] == pytest.approx(scipy.stats.kendalltau(human, per_caption, variant="c").statistic,
                                           abs=1e-12)
    assert entry["primary"] == "tau_c" and entry["headline"]["statistic"] == "tau_c"
    assert entry["rows"] == len(bench) == 8 and entry["contamination"] == [] and entry["models"] == []
    assert payload["benchmark"] == "nebula" and payload["settings"]["source"] == "expert-json"
    assert any("skipped" in n for n in payload["notes"])
    text = capsys.readouterr().out
    assert "nebula: correlation with human judgments" in text and "tau_c (protocol)" in text


def test_bench_on_hub_files_gives_image_metrics_the_embedded_images(tmp_path, monkeypatch):
    from support import image_metric
    from support.image_metric import image_score

    fake = image_metric.register(monkeypatch)
    _write_hub(tmp_path / "polaris", "polaris", "test")
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    bench = load_benchmark("polaris")
    calls = []
    real = bench.embedded_images
    bench.embedded_images = lambda: calls.append(1) or real()
    assert _Scorer(["bleu_4"], None, {}, False).check_images(bench) is None and calls == []  # text only: not read
    result = run_benchmark("polaris", [fake, "bleu_4"])
    expected = [image_score(im, i) for i, im in enumerate(bench.images())]
    human = [r.human_scores[0] for r in bench.records]
    assert result.results[fake]["tau_c"] == pytest.approx(stats.kendall_tau(human, expected, "c"))
    assert result.results["bleu_4"]["contamination"] == [] and result.settings["source"] == "hub-parquet"
    text = render(result, "text")
    assert "polaris: correlation with human judgments" in text and "None" not in text.split("\n")[1]


def test_leaderboard_column_of_a_judgment_set():
    payload = {"benchmark": "polaris", "settings": {"split": "test", "source": "hub-parquet"},
               "results": {"cider_d": {"tau_c": 0.5, "primary": "tau_c", "contamination": [],
                                       "headline": {"statistic": "tau_c", "value": 0.5, "ci": None}}}}
    board = build_leaderboard([("polaris.json", payload)])
    assert [c.label for c in board.columns] == ["Polaris (test) τ-c"]


# -- contamination ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["nebula", "polaris"])
def test_coco_trained_models_are_marked_and_rule_based_ones_are_not(name):
    assert contamination("cider_d", name) == [] and contamination("spice", name) == []
    reasons = contamination("sentence_cosine", name)  # all-MiniLM-L6-v2 read COCO train2014 caption pairs
    assert reasons and any("COCO" in r and "split not stated" in r for r in reasons)
    assert contamination("lceval", name)  # COCO captions, this benchmark's images not left out
