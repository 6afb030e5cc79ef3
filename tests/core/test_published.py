"""The published-numbers table is complete and internally consistent."""
from capeval.published import citations, published


def test_every_entry_is_cited_and_scaled():
    cites = citations()
    for bench in ["flickr8k-expert", "flickr8k-crowdflower", "composite", "pascal50s", "abstract50s", "thumb", "coco2015"]:
        entries = published(bench)
        assert entries, bench
        for e in entries:
            assert e["source"] in cites
            assert e["scale"] in (1, 100)


def test_known_values_transcribed():
    (clip,) = published("flickr8k-expert", protocol="clipscore", statistic="tau_c")[:1]
    assert clip["values"]["cider_d"] == 43.9 and clip["values"]["spice"] == 44.9
    rubric = published("thumb", statistic="rubric")[0]["values"]
    assert rubric["Up-Down"]["total"] == 3.88 and rubric["Human"]["recall"] == 4.35
    best_worst = published("thumb", statistic="strictly_best_worst")[0]["values"]
    assert sum(v["best"] for v in best_worst.values()) == 854
