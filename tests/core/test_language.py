"""English only, said at run time: a non-English prediction or reference gets one warning naming it
by index (the first 10), English captions none (every Flickr8k caption), ``language_check=False`` /
``--no-language-check`` silence it, and no score changes."""
from __future__ import annotations

import json
import warnings

import pytest

import capeval
from capeval.language import NonEnglishWarning, non_english

NON_ENGLISH = ["Un chien court dans le parc avec une balle", "Ein Hund läuft über die Wiese",
               "Un perro corre en el parque con una pelota", "Il cane corre nel parco con una palla",
               "Een hond rent op het gras met een bal", "东京的猫在睡觉", "Собака бежит по траве", "Ο σκύλος τρέχει",
               "كلب يركض في الحديقة", "Der Hund ist auf dem Sofa"]
ENGLISH = ["A man eats paella at the café", "Two dogs play in the snow", "a dog", "Le", "OK", "...", "🙂",
           "Crème brûlée served on a plate", "A boy named José jumps into the pool", "The Eiffel Tower in Paris",
           "a man in a red shirt is climbing a rock", "Die-hard fans cheer at the stadium"]


@pytest.mark.parametrize("text", NON_ENGLISH)
def test_other_languages_are_flagged(text):
    assert non_english(text)


@pytest.mark.parametrize("text", ENGLISH)
def test_english_is_not(text):
    assert not non_english(text)


def test_no_flickr8k_caption_is_flagged():
    from support import require_data

    lines = require_data("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    captions = [line.split("\t", 1)[1] for line in lines if "\t" in line]
    assert len(captions) == 40_460
    assert [c for c in captions if non_english(c)] == []


def test_one_warning_names_the_items_and_scores_do_not_change():
    preds = ["a dog runs on the grass", NON_ENGLISH[0]] + NON_ENGLISH[1:] + ["two cats"]
    refs = [["a dog running"], ["a dog in a park"]] + [["a dog"]] * (len(NON_ENGLISH) - 1) + [[NON_ENGLISH[5], "cats"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flagged = capeval.score(preds, refs, metrics="bleu_4")
    ours = [w for w in caught if issubclass(w.category, NonEnglishWarning)]
    assert len(ours) == 1 and ours[0].filename == __file__
    text = str(ours[0].message)
    assert text.startswith("11 caption(s) do not look English") and "predictions[1]" in text
    assert "predictions[10]" in text and "references[11][0]" not in text and "and 1 more" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonEnglishWarning)
        silent = capeval.score(preds, refs, metrics="bleu_4", language_check=False)
    assert silent["per_caption"] == flagged["per_caption"]
    with pytest.raises(TypeError, match="language_check must be True or False"):
        capeval.score(preds, refs, metrics="bleu_4", language_check="no")


def test_english_input_gives_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonEnglishWarning)
        capeval.score(ENGLISH[:3], [["a man eating"], ["dogs in snow"], ["a dog"]], metrics="bleu_4")


def test_the_command_line_warns_and_is_silenced(tmp_path, capsys):
    from capeval.cli import main

    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"image_id": 1, "caption": NON_ENGLISH[0]}, {"image_id": 2, "caption": "a dog"}]))
    refs = tmp_path / "r.json"
    refs.write_text(json.dumps({"1": ["a dog in a park"], "2": ["a dog runs"]}))
    args = ["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "bleu_4"]
    assert main(args) == 0
    assert "do not look English" in capsys.readouterr().err
    assert main([*args, "--no-language-check"]) == 0
    assert "do not look English" not in capsys.readouterr().err
