"""capeval.ray.score / capeval.ray.corpus inside a Ray Data pipeline on a real local Ray cluster: the per-caption
columns and corpus values are capeval.score's on the same rows, bad rows raise or are skipped, and metrics whose
scores depend on the batching are refused."""
from __future__ import annotations

import json

import pytest

from support.caption_rows import make_rows, rows_with_images

pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

WEIGHTLESS = ["bleu", "meteor", "rouge_l", "cider_d", "spice", "spider", "caption_length"]


def _dataset(ray, rows: list[dict], blocks: int = 4):
    return ray.data.from_items(rows).repartition(blocks)


def _by_id(scored) -> list[dict]:
    return sorted(scored.take_all(), key=lambda row: row["id"])


def test_columns_and_corpus_are_capeval_score_on_the_same_rows(ray_cluster):
    pytest.importorskip("spacy")
    import capeval.ray

    rows = make_rows(90, seed=21)
    scored = capeval.ray.score(_dataset(ray_cluster, rows), metrics=WEIGHTLESS, batch_size=16,
                               language_check=False).materialize()
    whole = capeval.score([r["prediction"] for r in rows], [r["references"] for r in rows], metrics=WEIGHTLESS,
                          language_check=False)
    out = _by_id(scored)
    assert [r["id"] for r in out] == [r["id"] for r in rows]
    assert all(r["capeval_error"] is None for r in out)
    # one state per batch (batches of 16 rows at most, formed within Ray's blocks)
    assert sum(r["capeval_state"] is not None for r in out) >= -(-90 // 16)
    for key, values in whole["per_caption"].items():
        assert max(abs(r[key] - v) for r, v in zip(out, values)) <= 1e-9, key
    corpus = capeval.ray.corpus(scored)
    assert corpus["rows"] == 90 and corpus["skipped"]["count"] == 0
    assert corpus["signature"] == whole["signature"]
    for key, value in whole.items():
        if isinstance(value, float):
            assert corpus[key] == pytest.approx(value, abs=1e-9), key
    state = json.loads(next(r["capeval_state"] for r in out if r["capeval_state"]))
    assert state["selected"]["bleu"] == ["bleu_1", "bleu_2", "bleu_3", "bleu_4"] and "meteor" in state["states"]


def test_the_corpus_of_a_scored_dataset_written_and_read_back(ray_cluster, tmp_path):
    import capeval.ray

    rows = make_rows(50, seed=22)
    scored = capeval.ray.score(_dataset(ray_cluster, rows), metrics=["bleu", "cider_d"], batch_size=7,
                               language_check=False)
    scored.write_parquet(str(tmp_path / "scored"))
    again = ray_cluster.data.read_parquet(str(tmp_path / "scored"))
    whole = capeval.score([r["prediction"] for r in rows], [r["references"] for r in rows],
                          metrics=["bleu", "cider_d"], language_check=False)
    corpus = capeval.ray.corpus(again)
    for key in ("bleu_4", "cider_d"):
        assert corpus[key] == pytest.approx(whole[key], abs=1e-9)
    with pytest.raises(ValueError, match="this dataset has no capeval_state column: give capeval.ray.corpus what "
                                         "capeval.ray.score returned."):
        capeval.ray.corpus(_dataset(ray_cluster, rows))


def test_bad_rows_raise_naming_the_row_or_are_skipped(ray_cluster):
    import capeval.ray

    rows = make_rows(30, seed=23)
    rows[11]["prediction"] = "   "
    with pytest.raises(Exception, match=r"capeval.ray.score: row with id 'img00011': prediction is empty "
                                        r"\(empty='zero' scores it 0\)\. on_error='skip' scores the other rows"):
        capeval.ray.score(_dataset(ray_cluster, rows), metrics=["bleu"], id_column="id",
                          language_check=False).materialize()
    scored = capeval.ray.score(_dataset(ray_cluster, rows), metrics=["bleu", "cider_d"], on_error="skip",
                               id_column="id", batch_size=8, language_check=False).materialize()
    out = _by_id(scored)
    assert out[11]["bleu_4"] is None and out[11]["cider_d"] is None
    assert out[11]["capeval_error"] == "prediction is empty (empty='zero' scores it 0)"
    kept = [r for i, r in enumerate(rows) if i != 11]
    whole = capeval.score([r["prediction"] for r in kept], [r["references"] for r in kept],
                          metrics=["bleu", "cider_d"], language_check=False)
    corpus = capeval.ray.corpus(scored)
    assert corpus["rows"] == 29 and corpus["skipped"] == {"count": 1, "rows": [
        {"row": None, "id": "img00011", "why": "prediction is empty (empty='zero' scores it 0)"}]}
    assert corpus["cider_d"] == pytest.approx(whole["cider_d"], abs=1e-9)
    assert corpus["bleu_4"] == pytest.approx(whole["bleu_4"], abs=1e-9)


def test_an_image_metric_on_random_weights_scores_in_the_pipeline(ray_cluster, tmp_path):
    import capeval.ray

    clip_model, rows = rows_with_images(tmp_path / "vl", 9, seed=24)
    scored = capeval.ray.score(_dataset(ray_cluster, rows, blocks=3), metrics=["ref_clip_s"], image_column="image",
                               batch_size=4, concurrency=1, language_check=False,
                               clip_model=clip_model).materialize()
    whole = capeval.score([r["prediction"] for r in rows], [r["references"] for r in rows], metrics=["ref_clip_s"],
                          images=[r["image"] for r in rows], clip_model=clip_model,
                          language_check=False)
    out = _by_id(scored)
    # float32 models in batches of 4 against one batch of 9: equal to float32 precision
    assert [r["ref_clip_s"] for r in out] == pytest.approx(whole["per_caption"]["ref_clip_s"], abs=1e-5)
    assert capeval.ray.corpus(scored)["ref_clip_s"] == pytest.approx(whole["ref_clip_s"], abs=1e-5)


def test_what_cannot_be_scored_batch_by_batch_is_refused_before_any_work(ray_cluster):
    import capeval.ray

    ds = _dataset(ray_cluster, make_rows(4))
    cases = [(dict(metrics=["spice_u"]), "spice_u cannot be scored in a Ray pipeline (SPICE-U's uniqueness counts concepts over the "
                                          "whole set of captions at once); score it with capeval.score on the whole "
                                          "set."),
             (dict(metrics=["polos"]), "polos cannot be scored in a Ray pipeline (its scores depend on its batches "
                                       "of 32 (polos_batch_size)); score it with capeval.score_dataset(..., "
                                       "engine='ray') or capeval.score."),
             (dict(batch_size=0), "batch_size must be a positive integer, got 0."),
             (dict(on_error="ignore"), "on_error must be one of ('raise', 'skip'), got 'ignore'."),
             (dict(concurrency=0), "concurrency must be a positive integer, got 0."),
             (dict(metrics=["clip_s"]), "clip_s read(s) images: give image_column=, the column with one image per "
                                        "row.")]
    for kwargs, message in cases:
        with pytest.raises(ValueError) as caught:
            capeval.ray.score(ds, **kwargs)
        assert str(caught.value).startswith(message), str(caught.value)
    with pytest.raises(ValueError, match="Unknown option"):
        capeval.ray.score(ds, cider_dff="x")
