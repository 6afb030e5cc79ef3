"""The ``java`` METEOR backend (the jar driver): sanitising, deadlines and restarts, errors, shutdown.

Protocol failures are simulated with a small fake METEOR server (a Python script speaking the stdio
protocol), so they run in a second; the real jar is used for hostile input and shutdown.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import time

import pytest

import capeval
from capeval.java import JavaNotFoundError
from capeval.coco.meteor import Meteor
from capeval.meteor import jar as meteor_module
from capeval.meteor.jar import MeteorError, MeteorScorer, sanitize, score_line

FAKE_SERVER = textwrap.dedent(
    """
    import os, sys, time
    mode, marker = sys.argv[1], sys.argv[2]
    if mode == "die":
        sys.exit(3)
    if mode == "hang" or (mode == "hang-first" and not os.path.exists(marker)):
        open(marker, "w").close()
        time.sleep(600)
    for line in sys.stdin:
        if line.startswith("SCORE"):
            n_fields = line.count("|||")
            if mode == "hang-later" and "third" in line:
                time.sleep(600)
            print(f"{n_fields}.0 2.0 3.0 4.0", flush=True)
            if mode == "extra":
                print("0.0 0.0 0.0 0.0", flush=True)
        elif line.startswith("EVAL"):
            n = line.count("|||")
            for i in range(n):
                print(f"0.{i + 1}", flush=True)
            print("0.25", flush=True)
        else:
            print("Error: specify SCORE or EVAL or SING", flush=True)
    """
)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """``fake(mode)`` -> a MeteorScorer whose 'JVM' is the fake server in ``mode``."""
    script = tmp_path / "fake_meteor.py"
    script.write_text(FAKE_SERVER)
    monkeypatch.setattr(meteor_module, "STARTUP_TIMEOUT", 1.0)
    monkeypatch.setattr(meteor_module, "java_executable", lambda purpose="": sys.executable)
    made = []

    def make(mode: str, jvms: int = 1, timeout: float = 1.0) -> MeteorScorer:
        scorer = MeteorScorer(jvms=jvms, timeout=timeout)
        scorer.command = [sys.executable, str(script), mode, str(tmp_path / f"marker-{mode}")]
        made.append(scorer)
        return scorer

    yield make
    for scorer in made:
        scorer.close()


# -- sanitising -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("a dog runs", "a dog runs"),
        ("a dog\nruns", "a dog runs"),
        ("a\r\ndog", "a dog"),
        ("a\u2028dog\u2029runs\x85x\x0by\x0cz", "a dog runs x y z"),
        ("tab\there\x00nul\x1fus\x7fdel", "tab here nul us del"),
        ("a ||| b", "a b"),
        ("a|||b", "ab"),
        ("||||||", ""),
        ("a |||| b", "a | b"),
        ("café 🐶 日本", "café 🐶 日本"),
    ],
)
def test_sanitize(raw, clean):
    assert sanitize(raw) == clean


@pytest.mark.parametrize("n_pipes", range(1, 12))
def test_sanitize_never_leaves_a_field_separator(n_pipes):
    text = "x " + "|" * n_pipes + " y|" + "|" * n_pipes + "|z"
    assert "|||" not in sanitize(text)


def test_score_line_is_pycocoevalcaps_format():
    assert score_line("a dog", ["the dog", "a cat"]) == "SCORE ||| the dog ||| a cat ||| a dog"
    # empty hypothesis: the line still ends with the separator and a space, as in pycocoevalcap
    assert score_line("", ["the dog"]) == "SCORE ||| the dog ||| "
    assert score_line("x\ny", ["a|||b\r"]).count("\n") == 0


# -- protocol failures (fake server) ---------------------------------------------------------------------


def test_fake_server_round_trip(fake):
    scorer = fake("serve")
    corpus, per = scorer.score(["a", "b", "c"], [["r"], ["r", "s"], ["r"]])
    assert corpus == 0.25 and per == [0.1, 0.2, 0.3]
    assert scorer.restarts == 0


def test_two_jvms_split_the_requests_and_eval_once(fake):
    scorer = fake("serve", jvms=2)
    stats = scorer.statistics(["a", "b", "c"], [["r"], ["r", "s"], ["r"]])
    assert [s.split()[0] for s in stats] == ["2.0", "3.0", "2.0"]  # order kept across the JVMs
    assert len(scorer._jvms) == 2
    assert scorer.score(["a", "b", "c"], [["r"], ["r", "s"], ["r"]]) == (0.25, [0.1, 0.2, 0.3])


@pytest.mark.timeout(120)  # a hang guard: the 1 s timeout fires, or the test fails
def test_hang_at_start_is_restarted(fake):
    scorer = fake("hang-first")
    corpus, per = scorer.score(["a", "b"], [["r"], ["s"]])
    assert per == [0.1, 0.2] and scorer.restarts == 1


def test_hang_mid_way_names_the_first_unanswered_caption(fake):
    scorer = fake("hang-later")
    with pytest.raises(MeteorError, match=r"caption 2 \('third'\).*after 2 restart\(s\).*meteor_timeout"):
        scorer.score(["first", "second", "third", "fourth"], [["r"]] * 4)


@pytest.mark.timeout(120)  # a hang guard
def test_permanent_hang_raises_naming_the_caption(fake):
    scorer = fake("hang")
    with pytest.raises(MeteorError, match=r"did not answer within 1 s on caption 0 \('a dog'\)"):
        scorer.score(["a dog"], [["r"]])


def test_dead_jvm_raises(fake):
    with pytest.raises(MeteorError, match="exited on caption 0"):
        fake("die").score(["a"], [["r"]])


def test_extra_answers_are_detected(fake):
    with pytest.raises(MeteorError, match="lost synchronisation"):
        fake("extra").score(["a", "b"], [["r"], ["r"]])


@pytest.mark.parametrize("jvms, timeout, match", [(0, 60, "meteor_jvms"), (1.5, 60, "meteor_jvms"), (1, 0, "meteor_timeout")])
def test_bad_options(jvms, timeout, match):
    with pytest.raises(ValueError, match=match):
        MeteorScorer(jvms=jvms, timeout=timeout)


def test_options_through_score_are_validated():
    with pytest.raises(ValueError, match=r"meteor_jvms must be an integer >= 1, got -1"):
        capeval.score(["a dog"], [["a dog"]], metrics="meteor", tokenizer="ptb-java", meteor_jvms=-1)
    with pytest.raises(ValueError, match="meteor_backend must be one of"):
        capeval.score(["a dog"], [["a dog"]], metrics="meteor", meteor_backend="jvm")


def test_java_missing_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match=r"METEOR 1\.5.*meteor_backend='java'.*apt-get install default-jre-headless"):
        MeteorScorer()
    with pytest.raises(JavaNotFoundError, match="JAVA_HOME"):
        Meteor.check_available(backend="java")
    with pytest.raises(JavaNotFoundError, match="meteor_backend='java'"):
        capeval.score(["a dog"], [["a dog"]], metrics="meteor", meteor_backend="java")
    # the default backend needs no Java at all
    Meteor.check_available()
    assert capeval.score(["a dog runs"], [["a dog runs"]], metrics="meteor")["meteor"] > 0.9


# -- the real jar ----------------------------------------------------------------------------------------


@pytest.mark.java
def test_hostile_input_scores_like_clean_input_and_closes(java):
    hostile_hyps = ["a dog\nruns ||| on grass", "a cat\r\nsits\u2028here", "", "🐶 emoji dog café", "x\x00y"]
    hostile_refs = [
        ["a dog runs\non the grass", "|||", "dogs\x85running"],
        ["a cat sits\rthere", "a cat\x0bon a mat"],
        ["an empty prediction"],
        ["a dog 🐶 in a café", "\u2029"],
        ["x y"],
    ]
    clean_hyps = ["a dog runs on grass", "a cat sits here", "", "🐶 emoji dog café", "x y"]
    clean_refs = [
        ["a dog runs on the grass", "", "dogs running"],
        ["a cat sits there", "a cat on a mat"],
        ["an empty prediction"],
        ["a dog 🐶 in a café", " "],
        ["x y"],
    ]
    with MeteorScorer(timeout=120) as scorer:
        corpus, per = scorer.score(hostile_hyps, hostile_refs)
        assert (corpus, per) == scorer.score(clean_hyps, clean_refs)
        processes = [jvm.process for jvm in scorer._jvms]
    assert all(math.isfinite(s) and 0 <= s <= 1 for s in per)
    assert per[2] == 0.0 and per[4] > 0.9  # empty prediction; exact match (fragmentation penalty only)
    assert 0 < corpus < 1
    assert processes and all(p.poll() is not None for p in processes)  # killed on leaving the block
    assert scorer.restarts == 0


@pytest.mark.java
def test_jvm_is_killed_at_interpreter_exit(java, tmp_path):
    code = textwrap.dedent(
        """
        from capeval.meteor.jar import MeteorScorer
        scorer = MeteorScorer(timeout=120)
        print(scorer.score(["a dog"], [["a dog runs"]])[0])
        print(scorer._jvms[0].process.pid, flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    score, pid = out.stdout.split()
    assert 0 < float(score) < 1
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"METEOR JVM {pid} still running after its interpreter exited")


def test_summed_statistics_follow_addstats():
    """Chunks of a perfect match (all words matched, one chunk) are not added, as in MeteorStats.addStats."""
    from capeval.meteor.jar import _sum_statistics

    perfect = "2.0 2.0 0.0 0.0 2.0 2.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 1.0 2.0 2.0"
    partial = "4.0 6.0 2.0 3.0 1.0 1.0 1.0 1.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 1.0 1.0 0.0 2.0 3.0 3.0"
    summed = _sum_statistics([perfect, partial, perfect]).split()
    assert summed[0] == "8.0" and summed[1] == "10.0"
    assert summed[20] == "2.0"  # only the partial match's 2 chunks
    assert summed[21] == "7.0"
    assert _sum_statistics(["1.0 2.0"]) is None
