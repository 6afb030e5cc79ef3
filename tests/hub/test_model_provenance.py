"""Every model card carries the provenance block generated from the catalog (status, training data, not-clean
benchmarks), and it is current."""
from __future__ import annotations

from capeval.hub.model_provenance import BEGIN, END, block, main, sync_cards
from capeval.catalog import MODELS
from capeval.paths import hub_cards_dir

PRETRAINED = tuple(name for name, m in MODELS.items() if m.location in ("bundled", "hub"))


def test_every_shipped_card_has_a_current_block():
    assert sync_cards() == [], "run: python -m capeval.hub.model_provenance --write"
    for name in PRETRAINED:
        text = hub_cards_dir("models", f"{name}.md").read_text(encoding="utf-8")
        assert text.count(BEGIN) == 1 and text.count(END) == 1, name


def test_block_names_inherited_data_and_dirty_benchmarks():
    plus = block("critic-flickr8k-plus")
    assert "Flickr30k same-image caption pairs" in plus and "(via all-minilm-l6-v2)" in plus
    assert "**Not clean on**" in plus and "flickr8k-expert" in plus and "thumb" not in plus.split("Not clean on")[1]
    joint = block("critic-flickr8k-joint")
    assert "The default of `critic_ref`, picked by the rule in BENCHMARKS.md; recommended" in joint
    # COCO train2014 captions: clean on every benchmark whose images capeval's corpora leave out, not on Nebula and
    # Polaris and DetailCaps-4870, whose COCO split is not stated (declared as all of COCO)
    assert "marks these rows †): nebula, polaris, detailcaps." in joint  # DetailCaps-4870: COCO images, split unstated
    # Flickr8k train images: DetailCaps-4870's Flickr images (which Flickr set, and which split, is not stated:
    # declared as all of Flickr30k, which holds Flickr8k) may be among them; clean on every other benchmark
    assert "marks these rows †): detailcaps." in block("critic-flickr8k")
    assert "by definition" in block("lceval-released-9990")
    assert "reproduction of the paper's model" in block("critic-flickr8k")


def test_sync_inserts_after_the_title_and_check_mode_fails(tmp_path):
    card = tmp_path / "critic-flickr8k.md"
    card.write_text("---\nlicense: apache-2.0\n---\n# A title\n\nBody.\n", encoding="utf-8")
    assert main(["--folder", str(tmp_path)]) == 1
    assert sync_cards(tmp_path, write=True) == ["critic-flickr8k"]
    text = card.read_text(encoding="utf-8")
    assert text.index("# A title") < text.index(BEGIN) < text.index("Body.")
    assert sync_cards(tmp_path) == [] and main(["--folder", str(tmp_path)]) == 0
