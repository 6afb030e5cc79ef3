"""One declaration per metric option (``capeval.Option``): its checks, its flags on every scoring command, and no
option that exists in one place and not in another."""
from __future__ import annotations

import argparse

import pytest

import capeval
from capeval import Option, metric_options
from capeval.cli import build_parser
from capeval.cli.metric_flags import flag_of, registered_options
from capeval.options import OptionValueError
from capeval.registry import REGISTRY, metric_class

SCORING_COMMANDS = ("score", "score-dataset", "bench", "robustness")


def _command(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices[name]


def test_checks_come_from_the_declaration():
    size = Option(default=8, minimum=1, help="items per batch")
    assert size.check("x_batch_size", 3) == 3
    for bad in (0, -2, True, 2.5, "many", "4", None):  # a number as text is refused: the flags convert their text
        with pytest.raises(OptionValueError) as err:
            size.check("x_batch_size", bad)
        assert err.value.option == "x_batch_size" and err.value.value == bad
        assert str(err.value).startswith("x_batch_size must be an integer >= 1, got ")
    mode = Option(default="mean", choices=("mean", "max"), help="reduction")
    with pytest.raises(OptionValueError, match=r"one of 'mean', 'max', got 'maxx'; did you mean 'max'\?") as err:
        mode.check("x_reduce", "maxx")
    assert err.value.suggestion == "max"
    flag = Option(default=False, help="a switch")
    assert flag.kind == "bool" and flag.check("x_flag", True) is True
    with pytest.raises(OptionValueError, match="True or False"):
        flag.check("x_flag", "yes")
    device = Option(default=None, kind="device", help="where")
    assert device.check("x_device", None) is None and device.check("x_device", "cuda:1") == "cuda:1"
    with pytest.raises(ValueError, match="kind"):
        Option(default=1, kind="integer")


def test_a_metric_checks_its_options_and_names_the_closest():
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['meteor_backnd'\]; did you mean 'meteor_backend'"):
        metric_class("meteor")(meteor_backnd="java")
    assert metric_class("meteor")().config == metric_class("meteor").option_defaults()


def test_every_option_is_declared_with_help():
    for name in REGISTRY:
        for option, declaration in metric_options(name).items():
            assert isinstance(metric_class(name).options[option], Option), f"{name}.{option} is a bare value"
            assert declaration.help.strip(), f"{name}.{option} has no help"
            assert option.startswith(name.split("_")[0]) or option.split("_")[0] in name or \
                option.startswith(("cider", "spice", "clip", "pac")), f"{name}.{option}: not prefixed by its family"


def test_an_option_shared_by_several_metrics_is_declared_alike():
    seen: dict[str, tuple[str, Option]] = {}
    for name in REGISTRY:
        for option, declaration in metric_options(name).items():
            if option in seen:
                first, other = seen[option]
                assert declaration == other, f"{option}: {first} and {name} declare it differently"
            else:
                seen[option] = (name, declaration)


@pytest.mark.parametrize("command", SCORING_COMMANDS)
def test_every_option_has_its_flag_on_every_scoring_command(command):
    parser = _command(command)
    by_dest = {action.dest: action for action in parser._actions}
    for option, (declaration, _) in registered_options().items():
        action = by_dest.get(option)
        assert action is not None, f"capeval {command} has no flag for {option}"
        assert flag_of(option, declaration) in action.option_strings
        for alias in declaration.aliases:
            assert alias in action.option_strings
        if declaration.choices is not None and declaration.kind != "bool":
            assert list(action.choices) == list(declaration.choices), option
        assert action.default is None, f"{option}: a flag not given must pass nothing"


def test_a_flag_passes_its_option_and_nothing_else():
    from capeval.cli.output import model_options

    parser = _command("score")
    given = model_options(parser.parse_args(["--meteor-backend", "java", "--scale", "raw"]))
    assert given["meteor_backend"] == "java"
    assert {k for k in given if k.endswith("_scale")} == {k for k in registered_options() if k.endswith("_scale")}
    assert set(given) - {"meteor_backend"} == {k for k in given if k.endswith("_scale")}
    assert model_options(parser.parse_args([])) == {}


def test_a_bad_option_value_is_said_with_its_flag(capsys):
    from capeval.cli import main

    rc = main(["score", "--example", "--metrics", "meteor", "--meteor-jvms", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err == ["capeval score: error: --meteor-jvms must be an integer >= 1, got 0."], err


def test_public_names():
    assert {"Option", "CaptionMetric", "MetricOutput", "metric_options"} <= set(capeval.__all__)
