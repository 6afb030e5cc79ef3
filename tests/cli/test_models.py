"""``capeval models``: the catalog as a table and as JSON."""
from __future__ import annotations

import json

from capeval.catalog import DEFAULTS, MODELS
from capeval.cli import main
from capeval.catalog import BUNDLED


def test_json_lists_every_model_with_the_required_fields(capsys):
    assert main(["models", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(MODELS)
    for row in rows:
        assert {"name", "metric", "default", "training_data", "size_mb", "bundled", "status"} <= set(row)
        assert row["bundled"] == (row["name"] in BUNDLED) == (row["location"] == "bundled")
        assert (row["size_mb"] is None) == (row["location"] in ("pypi", "retired", "external"))
        assert (row["hub_repo"] == f"capeval/{row['name']}") == (row["location"] == "hub")
    by_name = {r["name"]: r for r in rows}
    assert set(by_name[DEFAULTS["critic_ref"]]["default"]) >= {"critic_ref"}
    assert by_name[DEFAULTS["lceval"]]["recommended"] == ["lceval"]
    assert any("Flickr30k" in item for item in by_name["critic-flickr8k-plus"]["training_data"])


def test_table_fits_100_columns_in_bytes_too(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(line.encode("utf-8")) for line in lines) <= 100, max(lines, key=len)


def test_table_filters_by_metric_and_refuses_unknown(capsys):
    assert main(["models", "--metric", "lceval", "--training-data", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "lceval-caption-flickr8k-coco" in out and "lceval (recommended)" in out and "critic-flickr8k " not in out
    assert "Flickr8k train split" in out
    assert main(["models", "--metric", "nope"]) == 1
    assert "no model serves it" in capsys.readouterr().err


def test_example_skips_metrics_whose_default_model_does_not_ship():
    from capeval.catalog import default_available
    from capeval.cli.cmd_score import _every_installed_metric
    from capeval.registry import DEFAULT_METRICS, REGISTRY

    assert not default_available("sentence_rank")  # experimental: no weights ship (its rule was not met)
    assert default_available("sentence_cosine") and default_available("lceval") and default_available("bleu")
    names = _every_installed_metric(DEFAULT_METRICS, REGISTRY)
    assert "sentence_rank" not in names and "critic" not in names  # no shipped model; reads images


def test_the_table_says_which_defaults_report_a_readable_scale(capsys):
    assert main(["models", "--wide"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("readable scale by default"))
    assert line.endswith("critic, critic_plus, critic_ref, lceval, lceval_plus")
    assert main(["models", "--metric", "lceval_released"]) == 0
    assert "readable scale" not in capsys.readouterr().out


def test_fetching_an_authors_file_says_how_to_get_it(capsys):
    """`capeval models fetch` of a model on no Hub repo prints the metric's own hint (``CaptionMetric.weights_hint``:
    PAC-S's and Polos' files), exit 1; a model with a Hub repo names its download command."""
    for name, expected in [("pac-s-clip-vit-b-32", "download clip_ViT-B-32.pth from the link in aimagelab/pacscore's "
                                                   "README"),
                           ("polos", "unzip it and put reprod/'s files in")]:
        assert main(["models", "fetch", name]) == 1
        err = " ".join(capsys.readouterr().err.split())  # as one line, however the terminal wraps it
        assert "is not a capeval repo; fetch it yourself: " in err and expected in err, err
    external = [m for m in MODELS.values() if m.location == "external" and m.hub_id]
    assert external
    assert main(["models", "fetch", external[0].name]) == 1
    assert f"hf download {external[0].hub_id}" in " ".join(capsys.readouterr().err.split())
