"""SPIDEr (``spider``): (CIDEr-D + SPICE) / 2 per caption and for the corpus, as aac-metrics defines it; CIDEr-D and
SPICE computed once when the call also reports them; options, signature, multi-process preparation, the CLI, the
bench harness and score_dataset."""
from __future__ import annotations

import json

import pytest
from support import require_data

import capeval
from capeval.batch import CaptionBatch
from capeval.coco.cider import CiderD
from capeval.signature import parse_signature
from capeval.spice.metric import Spice
from capeval.spider import Spider, spider_from_parts

pytest.importorskip("spacy")
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

PREDICTIONS = ["A dog runs across the grass.", "Two men ride horses on a beach.", "a red bus on a street",
               "A cat sleeps on a sofa."]
REFERENCES = [
    ["A brown dog running on a lawn.", "A dog runs through a grassy field."],
    ["Two people riding horses along the shore.", "Men on horseback at the beach."],
    ["A red double-decker bus on a street.", "A bus drives down the road."],
    ["A cat asleep on a couch.", "A grey cat lying on a red sofa."],
]


def test_spider_is_the_mean_of_cider_d_and_spice_per_caption_and_for_the_corpus():
    out = capeval.score(PREDICTIONS, REFERENCES, metrics=["spider", "cider_d", "spice"])
    assert out["spider"] == (out["cider_d"] + out["spice"]) / 2
    per = out["per_caption"]
    assert per["spider"] == [(c + s) / 2 for c, s in zip(per["cider_d"], per["spice"])]
    assert out["spider"] == pytest.approx(sum(per["spider"]) / len(PREDICTIONS), abs=1e-12)
    assert 0 < out["spider"] < 5.5 and out["cider_d"] > 1  # CIDEr-D on pycocoevalcap's x10 scale dominates
    alone = capeval.score(PREDICTIONS, REFERENCES, metrics="spider")
    assert alone["spider"] == out["spider"] and alone["per_caption"]["spider"] == per["spider"]
    assert set(alone["per_caption"]) == {"spider"} and "cider_d" not in alone and "spice" not in alone


def test_the_signature_records_both_parts_settings():
    out = capeval.score(PREDICTIONS, REFERENCES, metrics=["spider", "cider_d", "spice"])
    fields = parse_signature(out["signature"])
    assert fields["spider"] == f"cider_d[{fields['cider_d']}]+spice[{fields['spice']}]"
    assert "df=refs" in fields["spider"] and "syn=meteor-1.5-wordnet" in fields["spider"]


def test_spice_options_reach_spider():
    plain = capeval.score(PREDICTIONS, REFERENCES, metrics=["spider"])
    out = capeval.score(PREDICTIONS, REFERENCES, metrics=["spider", "cider_d", "spice"], spice_synonyms=False)
    assert out["spider"] == (out["cider_d"] + out["spice"]) / 2
    assert "syn=none" in parse_signature(out["signature"])["spider"]
    assert parse_signature(out["signature"])["spider"] != parse_signature(plain["signature"])["spider"]
    with pytest.raises(ValueError, match="spice_input"):
        capeval.score(PREDICTIONS, REFERENCES, metrics=["spider"], spice_input="nope")


@pytest.mark.parametrize("metrics", [["spider"], ["spider", "cider_d", "spice"], ["cider_d", "spice", "spider"],
                                     ["spice", "spider", "bleu_4", "cider_d"]])
def test_cider_d_and_spice_are_computed_once(metrics, monkeypatch):
    calls = {"cider_d": 0, "spice": 0}
    for cls in (CiderD, Spice):
        original = cls.compute

        def counted(self, batch, _original=original):
            calls[self.name] += 1
            return _original(self, batch)

        monkeypatch.setattr(cls, "compute", counted)
    out = capeval.score(PREDICTIONS, REFERENCES, metrics=metrics)
    assert calls == {"cider_d": 1, "spice": 1}
    assert list(out["per_caption"]) == [k for m in metrics for k in
                                        {"spice": ["spice", "spice_precision", "spice_recall"]}.get(m, [m])]


def test_prepare_leaves_spice_to_the_call_that_reports_it():
    """In a multi-process run (capeval.parallel) SPIDEr prepares SPICE's parses only when the call has no SPICE."""
    batch = CaptionBatch(PREDICTIONS, REFERENCES)
    spider, spice = Spider(), Spice()
    batch.metrics = {"spider": spider, "spice": spice}
    assert spider.prepare(batch.subset([0, 1])) == [None, None]  # what one process's share returns
    spider.use_prepared([None] * len(batch))
    assert spider.spice._prepared is None
    alone = CaptionBatch(PREDICTIONS, REFERENCES)
    prepared = Spider().prepare(alone)
    assert repr(prepared) == repr(Spice().prepare(alone)) and len(prepared) == len(PREDICTIONS)
    other = Spider()
    other.use_prepared(prepared)
    assert other.compute(CaptionBatch(PREDICTIONS, REFERENCES)).per_caption == \
        Spider().compute(CaptionBatch(PREDICTIONS, REFERENCES)).per_caption


def test_spider_from_parts():
    assert spider_from_parts(1.2, 0.2) == pytest.approx(0.7)
    assert spider_from_parts([1.0, 0.0], [0.5, 0.25]) == [0.75, 0.125]
    with pytest.raises(ValueError, match="2 CIDEr-D values but 1 SPICE"):
        spider_from_parts([1.0, 0.0], [0.5])


def test_against_aac_metrics_spider_on_the_same_cider_d_and_spice():
    """aac-metrics' own ``spider`` function, fed capeval's CIDEr-D and SPICE outputs (its SPICE runs a Java jar),
    combines them exactly as capeval does; its own CIDEr-D on capeval's PTB tokens equals capeval's."""
    torch = pytest.importorskip("torch")
    aac = pytest.importorskip("aac_metrics.functional.spider")
    out = capeval.score(PREDICTIONS, REFERENCES, metrics=["spider", "cider_d", "spice"])
    per = out["per_caption"]

    def parts(key):
        def fake(candidates, mult_references, **_):
            assert len(candidates) == len(PREDICTIONS)
            return ({key: torch.tensor(out[key], dtype=torch.float64)},
                    {key: torch.tensor(per[key], dtype=torch.float64)})
        return fake

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(aac, "cider_d", parts("cider_d"))
        mp.setattr(aac, "spice", parts("spice"))
        corpus, sents = aac.spider(PREDICTIONS, REFERENCES)
    assert corpus["spider"].item() == pytest.approx(out["spider"], abs=1e-15)
    assert sents["spider"].tolist() == pytest.approx(per["spider"], abs=1e-15)

    batch = CaptionBatch(PREDICTIONS, REFERENCES)
    cands = [" ".join(t) for t in batch.prediction_tokens]
    refs = [[" ".join(t) for t in r] for r in batch.reference_tokens]
    theirs = aac.cider_d(cands, refs)
    assert theirs[0]["cider_d"].item() == pytest.approx(out["cider_d"], abs=1e-9)
    assert theirs[1]["cider_d"].tolist() == pytest.approx(per["cider_d"], abs=1e-9)


def _write(tmp_path):
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text(json.dumps(PREDICTIONS), encoding="utf-8")
    refs.write_text(json.dumps(REFERENCES), encoding="utf-8")
    return preds, refs


def test_cli_score_metrics_spider(tmp_path, capsys):
    from capeval.cli import main

    preds, refs = _write(tmp_path)
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "spider,cider_d",
                 "--json", str(tmp_path / "out.json")]) == 0
    printed = capsys.readouterr().out
    assert "spider" in printed and "cider_d" in printed
    got = json.loads((tmp_path / "out.json").read_text())
    spice = capeval.score(PREDICTIONS, REFERENCES, metrics="spice")["spice"]
    assert got["spider"] == (got["cider_d"] + spice) / 2
    assert "spider" in parse_signature(got["signature"])


def test_score_dataset_spider_equals_one_call(tmp_path):
    """Chunked, with CIDEr-D's document frequencies counted over every row first (as for cider_d)."""
    pytest.importorskip("pyarrow")
    rows = [{"id": str(i), "prediction": p, "references": r}
            for i, (p, r) in enumerate(zip(PREDICTIONS * 3, REFERENCES[1:] + REFERENCES * 2 + REFERENCES[:1]))]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = capeval.score_dataset(str(data), metrics=["spider"], output_dir=tmp_path / "out", chunk_size=5)
    whole = capeval.score([r["prediction"] for r in rows], [r["references"] for r in rows], metrics=["spider"])
    assert result["spider"] == pytest.approx(whole["spider"], abs=1e-12)
    assert (tmp_path / "out" / "cider-df.bin").exists()


def test_bench_thumb_spider(tmp_path, monkeypatch):
    """``capeval bench thumb --metrics spider``: per system, the mean of that system's CIDEr-D and SPICE; nothing
    trained, so clean."""
    require_data("thumb")
    from capeval.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["bench", "thumb", "--metrics", "spider,cider_d,spice", "--no-cache", "--json", "out.json"]) == 0
    results = json.loads((tmp_path / "out.json").read_text())["results"]
    systems = results["spider"]["system"]
    assert len(systems) >= 5
    for system, value in systems.items():
        assert value == pytest.approx((results["cider_d"]["system"][system] + results["spice"]["system"][system]) / 2,
                                      abs=1e-12)
    assert results["spider"]["contamination"] == []
