"""Pairwise judging, CapArena's protocol (capeval.judges.arena): the prompts as njucckevin/CapArena's
vlm_as_a_judge.py writes them (transcribed below), both orders asked, the answers read as the reference reads them,
ties and failures counted, batched runs equal to one pair per call, the Elo ranking equal to a transcription of
cal_ranking.py, and ``capeval arena`` end to end on the tiny random LLaVA."""
from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

from capeval.judges.answers import JudgeContextWarning, JudgeFailureWarning
from capeval.judges.arena import collect, combine_orders, judge_pairs
from capeval.judges.arena_prompts import compare_prompt, read_judgment, system_prompt
from capeval.judges.elo import bootstrap_elo, compute_elo, rank_systems
from support.caparena_reference import reference_bootstrap, reference_compute_elo

pytest.importorskip("torch")

# -- the reference, transcribed (vlm_as_a_judge.py) -----------------------------------------------------------------

GUIDELINES = """Below are some guidelines for your reference:

1. **Precision**: The caption should accurately correspond to the content of the image, providing precise information about it. Common examples of imprecision include errors in color, quantity, spatial relationships, or the posture of people.

2. **Informativeness**: Salient information in the image should be reflected in the caption. Since it is impossible to include every detail, you will need to subjectively judge which aspects of the image are important. For instance, describing an otter as "a small animal" is precise, but it is less informative than specifying "an otter".

3. **Hallucination**: Captions that include descriptions of objects or elements that are clearly absent from the image should be significantly penalized.

4. **Attention to detail**: Annotators should pay close attention to the details in the image to distinguish the quality of the descriptions.

5. **Assistive description**: Imagine a visually impaired person asking you to describe the image for them. How would you convey the image to them?

6. **Reverse thinking**: What image does the caption lead us to imagine? Does the caption effectively lead you to imagine the intended image?

7. **Ties are acceptable**: If you find it genuinely difficult to determine which caption is better (e.g., both captions are excellent), marking a tie is acceptable.

While the above guidelines provide a framework, they cannot cover all possible cases. Therefore, we encourage you to make **subjective judgments** based on the specific circumstances and your own reasoning about which caption is better.
"""
FORMAT = """### Response Format:
Format your response into two lines as shown below:
Reason: <your thoughts and reasoning process for the judgment>
Judgment: <Caption 1 is better>/<Caption 2 is better>/<Tie>
"""
REF_SYSTEM_WITHOUT_REF = ("\nYou are a highly capable multimodal AI assistant tasked with evaluating image captions.\n\n"
                          "Given an image and two candidate captions, you are require to determine which of the two "
                          "captions is better.\n\n" + GUIDELINES + "\n" + FORMAT)
REF_SYSTEM_WITH_REF = (
    "\nYou are a highly capable multimodal AI assistant tasked with evaluating image captions.\n\nGiven an image, two "
    "candidate captions and one reference caption annotated by human expert, you are require to determine which of "
    "the two captions is better.\n\n" + GUIDELINES + "\n**Reference caption**: The reference caption is annotated by "
    "a human expert. When you're uncertain about which description is better (e.g., when unsure about specific "
    "details in the image), you can use the reference caption to assist your judgment. The content in the reference "
    "caption can be considered correct; however, it is not perfect, and descriptions not included in the reference "
    "caption can still be reasonable.\n\n" + FORMAT)


def reference_compare_prompt(caption_1, caption_2, caption_ref, with_ref):
    if with_ref:
        return f"Caption 1:\n{caption_1}\nCaption 2:\n{caption_2}\nCaption Reference:\n{caption_ref}\nDetermine which is better and answer with the given format. Only mark a tie if it is truly difficult to decide which caption is better based on their quality, informativeness, and precision."
    return f"Caption 1:\n{caption_1}\nCaption 2:\n{caption_2}\nDetermine which is better and answer with the given format. Only mark a tie if there is no discernible difference in quality, informativeness, and precision after careful evaluation."


def reference_parse(response):
    """The reference's reading (its regexes) and cal_agreement's accepted judgments."""
    reason_match = re.search(r"Reason:\s*(.+?)\s*Judgment:", response, re.DOTALL)
    judge_match = re.search(r"Judgment:\s*(.+)", response)
    judgment = judge_match.group(1).strip() if judge_match else None
    accepted = ["Caption 1 is better.", "Caption 1 is better", "Caption 2 is better.", "Caption 2 is better", "Tie",
                "Tie."]
    return (reason_match.group(1).strip() if reason_match else None), judgment, judgment in accepted


def synthetic_battles(n=80, seed=3):
    rng = np.random.default_rng(seed)
    systems = ["GPT-4o-0806", "InternVL2-26B", "LLaVA-1.5-7B", "MiniCPM-V2.6-8B", "Qwen2-VL-2B-Instruct"]
    strength = dict(zip(systems, [2.0, 1.0, -1.5, 0.3, -0.5]))
    out = []
    for _ in range(n):
        a, b = rng.choice(len(systems), 2, replace=False)
        sa, sb = systems[a], systems[b]
        p = 1 / (1 + np.exp(strength[sb] - strength[sa]))
        u = rng.random()
        out.append((sa, sb, "tie" if abs(u - p) < 0.08 else sa if u < p else sb))
    return out


# -- prompts and parsing ----------------------------------------------------------------------------------------------

def test_system_prompts_and_message_are_the_references():
    assert system_prompt(False) == REF_SYSTEM_WITHOUT_REF
    assert system_prompt(True) == REF_SYSTEM_WITH_REF
    a, b, ref = "A dog  runs.\nOn grass.", "A cat.", "A brown dog on a lawn."
    assert compare_prompt(a, b) == reference_compare_prompt(a, b, ref, False)
    assert compare_prompt(a, b, ref) == reference_compare_prompt(a, b, ref, True)


@pytest.mark.parametrize("answer, verdict", [
    ("Reason: the second is more precise.\nJudgment: Caption 2 is better.", "2"),
    ("Reason: x\nJudgment: Caption 1 is better", "1"),
    ("Judgment: Tie", "tie"),
    ("Reason: both fine.\nJudgment:   Tie.  \nextra line", "tie"),
    ("Judgment: caption 1 is better", None),  # not one of the reference's accepted judgments
    ("Judgment: <Caption 1 is better>", None),
    ("Caption 1 is better.", None),  # no Judgment: line
    ("0.73", None),
    ("", None),
    ("Judgment: Caption 2 is better.\nJudgment: Caption 1 is better.", "2"),  # the first Judgment: line
])
def test_answers_are_read_as_the_reference_reads_them(answer, verdict):
    got, judgment = read_judgment(answer)
    assert got == verdict
    _, ref_judgment, accepted = reference_parse(answer)
    assert judgment == ref_judgment
    assert (got is not None) == accepted


def test_the_both_orders_rule():
    assert combine_orders("1", "2") == "a"
    assert combine_orders("2", "1") == "b"
    for ab, ba in [("1", "1"), ("2", "2"), ("tie", "tie"), ("1", "tie"), ("tie", "1"), ("2", "tie"), ("tie", "2")]:
        assert combine_orders(ab, ba) == "tie", (ab, ba)
    for ab, ba in [(None, "1"), ("2", None), (None, None)]:
        assert combine_orders(ab, ba) is None


def test_ties_and_failures_are_counted_and_named():
    answers = ["Judgment: Caption 1 is better.", "Judgment: Caption 2 is better.",  # a, both orders
               "Judgment: Caption 2 is better.", "Judgment: Caption 1 is better.",  # b
               "Judgment: Caption 1 is better.", "Judgment: Caption 1 is better.",  # position bias: tie
               "Judgment: Tie", "Judgment: Caption 2 is better.",  # tie
               "garbage", "Judgment: Tie.",  # failed (a first unreadable)
               "Judgment: Tie.", "Judgment: maybe"]  # failed (b first unreadable)
    sources = [("x", "y"), ("x", "y"), ("y", "z"), ("x", "z"), ("x", "z"), ("y", "z")]
    with pytest.warns(JudgeFailureWarning, match=r"2 of 6 pair\(s\) got no verdict \(2 answer\(s\).*pairs\[4\], "
                                                 r"pairs\[5\]"):
        result = collect(answers, sources=sources)
    assert result.verdicts == ["a", "b", "tie", "tie", None, None]
    assert result.order_verdicts[2] == ("1", "1") and result.order_verdicts[4] == (None, "tie")
    assert result.counts() == {"a": 1, "b": 1, "tie": 2, "failed": 2}
    assert result.win_rates() == pytest.approx({"a": 1 / 6, "b": 1 / 6, "tie": 2 / 6, "failed": 2 / 6})
    assert [(f["index"], f["order"], f["answer"], f["judgment"]) for f in result.failures] == [
        (4, "ab", "garbage", None), (5, "ba", "Judgment: maybe", "maybe")]
    assert result.battles() == [("x", "y", "x"), ("x", "y", "y"), ("y", "z", "tie"), ("x", "z", "tie")]
    rows = {r.system: r for r in result.ranking(rounds=20)}
    assert (rows["x"].wins, rows["x"].losses, rows["x"].ties, rows["x"].battles) == (1, 1, 1, 3)
    assert rows["z"].win_rate == pytest.approx(0.5)
    assert result.pairs_json()[1]["ba"] == {"verdict": "1", "judgment": "Caption 1 is better.",
                                            "answer": "Judgment: Caption 1 is better."}
    with pytest.raises(ValueError, match="two per pair"):
        collect(answers[:3])


# -- Elo --------------------------------------------------------------------------------------------------------------

def test_elo_equals_cal_ranking():
    pd = pytest.importorskip("pandas")
    battles = synthetic_battles()
    frame = pd.DataFrame([{"img": f"{i}.jpg", "source1": a, "source2": b, "winner_gpt": "equal" if w == "tie" else w}
                          for i, (a, b, w) in enumerate(battles)])
    want = reference_compute_elo(frame)
    got = compute_elo(battles)
    assert set(got) == set(want)
    for system in want:
        assert got[system] == pytest.approx(want[system], abs=1e-9)
    np.random.seed(42)
    rounds = 60
    reference = reference_bootstrap(frame, rounds)
    systems, ratings = bootstrap_elo(battles, rounds=rounds, seed=42)
    for j, system in enumerate(systems):
        assert np.allclose(ratings[:, j], reference[system].to_numpy(), equal_nan=True, atol=1e-9), system
    ranked = rank_systems(battles, rounds=rounds, seed=42)
    assert [r.system for r in ranked] == list(reference.columns)  # calculate_elo_rankings' order
    medians = reference.median()
    for r in ranked:
        assert r.elo == pytest.approx(medians[r.system], abs=1e-9)
        assert r.ci_low == pytest.approx(reference[r.system].quantile(0.025), abs=1e-9)
        assert r.ci_high == pytest.approx(reference[r.system].quantile(0.975), abs=1e-9)
        assert r.ci_low <= r.elo <= r.ci_high
    assert ranked[0].system == "GPT-4o-0806" and ranked[-1].system == "LLaVA-1.5-7B"
    assert rank_systems(battles, rounds=rounds, seed=42) == ranked  # seeded
    assert rank_systems(battles, rounds=rounds, seed=7) != ranked


def test_a_battle_with_an_unknown_winner_is_refused():
    with pytest.raises(ValueError, match=r"battles\[1\]: winner 'q'"):
        bootstrap_elo([("a", "b", "a"), ("a", "b", "q")], rounds=2)


# -- the judge on the tiny random LLaVA ---------------------------------------------------------------------------------

def _pairs():
    from capeval.io import example_images

    photos = [str(p) for p in example_images()[:3]]
    images = [photos[0], photos[1], photos[2], photos[0]]
    a = ["a tabby cat looking at the camera", "an astronaut in front of a flag", "coffee in a white cup", "a cat"]
    b = ["a dog running on the grass", "a plate of food", "two cats on a sofa", "a striped cat sitting"]
    refs = ["a cat with grey stripes", "a woman in a space suit smiles", "a cup of coffee on a saucer", "a cat"]
    return images, a, b, refs


def _recording(monkeypatch):
    """Record what reaches the model's inputs (LLaVA prompt strings or chat conversations), in call order."""
    import capeval.judges.judge as judge_module

    seen: list = []
    original = judge_module.batch_inputs

    def batch_inputs(judge, prompts, images):
        seen.extend(prompts)
        return original(judge, prompts, images)

    monkeypatch.setattr(judge_module, "batch_inputs", batch_inputs)
    return seen


@pytest.mark.parametrize("with_refs", [True, False])
def test_the_llava_judge_reads_the_references_prompt_in_both_orders(tiny_llava, monkeypatch, with_refs):
    images, a, b, refs = _pairs()
    seen = _recording(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        warnings.simplefilter("ignore", JudgeContextWarning)  # the tiny judge's context is 1,024 positions
        result = judge_pairs(images[:2], a[:2], b[:2], refs[:2] if with_refs else None,
                             judge_model=str(tiny_llava["hf"]), batch_size=1, max_new_tokens=4)
    system = REF_SYSTEM_WITH_REF if with_refs else REF_SYSTEM_WITHOUT_REF
    want = []
    for i in range(2):
        for first, second in ((a[i], b[i]), (b[i], a[i])):
            message = reference_compare_prompt(first, second, refs[i], with_refs)
            want.append(f"{system} USER: <image>\n{message} ASSISTANT:")  # llava_v1, CapArena's system text
    assert seen == want
    assert len(result) == 2 and all(len(pair) == 2 for pair in result.answers)
    assert result.with_references is with_refs


def test_a_chat_judge_gets_a_system_turn_and_the_image_with_the_message(tiny_llava, tmp_path_factory, monkeypatch):
    from capeval.judges.random_llava import write_tiny_chat_judge

    chat = write_tiny_chat_judge(tmp_path_factory.mktemp("arena-chat"), tiny_llava, steps=1)
    images, a, b, refs = _pairs()
    seen = _recording(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        warnings.simplefilter("ignore", JudgeContextWarning)  # the tiny judge's context is 1,024 positions
        judge_pairs(images[:1], a[:1], b[:1], refs[:1], judge_model=str(chat), batch_size=2, max_new_tokens=3)
    # the reference's messages: a system turn with its text, a user turn with the image then compare_prompt
    assert seen == [[{"role": "system", "content": [{"type": "text", "text": REF_SYSTEM_WITH_REF}]},
                     {"role": "user", "content": [{"type": "image"},
                                                  {"type": "text", "text": reference_compare_prompt(x, y, refs[0], True)}]}]
                    for x, y in ((a[0], b[0]), (b[0], a[0]))]


def test_batched_equals_one_pair_per_call_and_is_deterministic(tiny_llava):
    images, a, b, refs = _pairs()
    model = str(tiny_llava["hf"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        warnings.simplefilter("ignore", JudgeContextWarning)  # the tiny judge's context is 1,024 positions
        batched = judge_pairs(images, a, b, refs, judge_model=model, batch_size=8, max_new_tokens=6)
        again = judge_pairs(images, a, b, refs, judge_model=model, batch_size=8, max_new_tokens=6)
        single = [judge_pairs([images[i]], [a[i]], [b[i]], [refs[i]], judge_model=model, batch_size=1,
                              max_new_tokens=6) for i in range(len(a))]
    assert batched.answers == [s.answers[0] for s in single]
    assert batched.verdicts == [s.verdicts[0] for s in single]
    assert batched.answers == again.answers
    assert all(answer for pair in batched.answers for answer in pair)  # the judge said something each time


def test_the_original_layout_judges_as_the_hf_layout(tiny_llava):
    images, a, b, refs = _pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        warnings.simplefilter("ignore", JudgeContextWarning)  # the tiny judge's context is 1,024 positions
        hf = judge_pairs(images[:2], a[:2], b[:2], judge_model=str(tiny_llava["hf"]), batch_size=1, max_new_tokens=5)
        original = judge_pairs(images[:2], a[:2], b[:2], judge_model=str(tiny_llava["original"]), batch_size=1,
                               max_new_tokens=5)
    assert hf.answers == original.answers


def test_prompts_over_the_judges_context_are_named(tiny_llava):
    images, a, b, refs = _pairs()
    with pytest.warns(JudgeContextWarning, match=r"the prompts of 2 pair\(s\) with up to 3 answer tokens exceed the "
                                                 r"judge's 1024-token context \(pairs\[0\], pairs\[1\]\)"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JudgeFailureWarning)
            judge_pairs(images[:2], a[:2], b[:2], judge_model=str(tiny_llava["hf"]), batch_size=4, max_new_tokens=3)


def test_a_large_judge_on_the_cpu_is_refused_in_the_arenas_words(tiny_llava, monkeypatch):
    from capeval.judges import judge
    from capeval.loaded_models import forget

    monkeypatch.setattr(judge, "CPU_PARAMETER_LIMIT", 1000)
    forget("judge")  # the limit is checked when a judge is loaded
    images, a, b, _ = _pairs()
    with pytest.raises(RuntimeError, match=r"^judge_model: .* billion parameters; on the CPU .* force_cpu=True") as err:
        judge_pairs(images[:1], a[:1], b[:1], judge_model=str(tiny_llava["hf"]), device="cpu")
    assert "fleur" not in str(err.value)
    forget("judge")


def test_bad_arguments_are_refused_before_loading():
    with pytest.raises(ValueError, match="captions_b: 1 values for 2 pairs"):
        judge_pairs(["x.jpg", "y.jpg"], ["a", "b"], ["c"], judge_model="/nonexistent")
    with pytest.raises(TypeError, match=r"captions_a\[1\]"):
        judge_pairs(["x.jpg", "y.jpg"], ["a", None], ["c", "d"], judge_model="/nonexistent")
    with pytest.raises(ValueError, match="batch_size"):
        judge_pairs(["x.jpg"], ["a"], ["c"], judge_model="/nonexistent", batch_size=0)


# -- capeval arena -----------------------------------------------------------------------------------------------------

SCRIPT = {  # (caption shown first, caption shown second) -> the answer; anything else: an unreadable answer
    ("a tabby cat looking at the camera", "a dog running on the grass"): "Reason: a cat.\nJudgment: Caption 1 is better.",
    ("a dog running on the grass", "a tabby cat looking at the camera"): "Reason: a cat.\nJudgment: Caption 2 is better.",
    ("an astronaut in front of a flag", "a plate of food"): "Judgment: Caption 2 is better.",
    ("a plate of food", "an astronaut in front of a flag"): "Judgment: Caption 1 is better.",
    ("coffee in a white cup", "two cats on a sofa"): "Judgment: Tie",
    ("two cats on a sofa", "coffee in a white cup"): "Judgment: Caption 1 is better.",
}


def _scripted(monkeypatch):
    """The tiny judge's generations replaced by :data:`SCRIPT`'s answers for the captions in each prompt (the rest of
    the path, the file, prompts, images, model calls, reading and counting, runs as it is)."""
    import capeval.judges.judge as judge_module

    original = judge_module.batch_inputs
    queue: list[str] = []

    def batch_inputs(judge, prompts, images):
        for p in prompts:
            found = re.search(r"Caption 1:\n(.*)\nCaption 2:\n(.*?)\n", p)
            queue.append(SCRIPT.get(found.groups(), "0.5"))
        return original(judge, prompts, images)

    monkeypatch.setattr(judge_module, "batch_inputs", batch_inputs)
    monkeypatch.setattr(judge_module, "decode", lambda judge, ids, special: queue.pop(0))


def test_the_cli_end_to_end(tiny_llava, tmp_path, monkeypatch, capsys):
    from capeval.cli import main

    images, a, b, refs = _pairs()
    pairs = [{"img": images[i], "caption1": a[i], "caption2": b[i], "source1": s1, "source2": s2}
             for i, (s1, s2) in enumerate([("sys-A", "sys-B"), ("sys-A", "sys-C"), ("sys-B", "sys-C"),
                                           ("sys-B", "sys-A")])]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    out = tmp_path / "out.json"
    _scripted(monkeypatch)
    monkeypatch.setenv("COLUMNS", "60")
    code = main(["arena", str(path), "--judge-model", str(tiny_llava["hf"]), "--batch-size", "1",
                 "--max-new-tokens", "2", "--bootstrap-rounds", "50", "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    got = json.loads(out.read_text())
    assert [p["verdict"] for p in got["pairs"]] == ["a", "b", "tie", None]
    assert got["counts"] == {"a": 1, "b": 1, "tie": 1, "failed": 1}
    assert got["pairs"][0]["ab"]["judgment"] == "Caption 1 is better." and got["pairs"][3]["ba"]["answer"] == "0.5"
    assert [f["index"] for f in got["failures"]] == [3, 3]
    ranking = {r["system"]: r for r in got["ranking"]}
    assert (ranking["sys-A"]["wins"], ranking["sys-A"]["losses"], ranking["sys-A"]["ties"]) == (1, 1, 0)
    assert (ranking["sys-C"]["wins"], ranking["sys-C"]["ties"]) == (1, 1)
    assert got["ranking"][-1]["system"] == "sys-B"
    assert all(len(line) <= 60 for line in captured.out.splitlines())
    assert "sys-A" in captured.out and "failed" in captured.out
    assert "1 of 4 pair(s) got no verdict" in captured.err and "pairs[3]" in captured.err


def test_the_cli_names_a_bad_pair(tmp_path, capsys):
    from capeval.cli import main
    from capeval.io import example_images

    path = tmp_path / "pairs.json"
    good = {"image": str(example_images()[0]), "caption_a": "a", "caption_b": "b"}
    path.write_text(json.dumps([good, good, good, {"image": good["image"], "caption_a": "a"}]))
    assert main(["arena", str(path), "--judge-model", "/nonexistent"]) == 1
    assert "capeval arena: error: pairs[3]: no caption_b (or caption2)." in capsys.readouterr().err
    path.write_text(json.dumps([good, {**good, "image": "missing.jpg"}]))
    assert main(["arena", str(path), "--judge-model", "/nonexistent"]) == 1
    assert "pairs[1]: image" in capsys.readouterr().err
    path.write_text(json.dumps([{**good, "reference": "r"}, good]))
    assert main(["arena", str(path), "--judge-model", "/nonexistent"]) == 1
    assert "pairs[1]: no reference" in capsys.readouterr().err
