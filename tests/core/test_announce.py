"""One-time work says so on stderr when it runs longer than a moment, on a terminal or not."""
from __future__ import annotations

import time

from capeval.progress import announce, quiet


def test_a_long_step_is_announced_once_and_a_short_one_not(capsys):
    with announce("building a table", after=0.05):
        time.sleep(0.3)
    assert capsys.readouterr().err == "capeval: building a table\n"  # stderr is captured: no terminal
    with announce("loading a model", after=0.5):
        pass
    time.sleep(0.6)  # the timer was cancelled: nothing comes later either
    assert capsys.readouterr().err == ""


def test_quiet_and_progress_false_silence_it(capsys):
    with quiet(), announce("building a table", after=0.01):
        time.sleep(0.1)
    with announce("building a table", after=0.01, enabled=False):
        time.sleep(0.1)
    assert capsys.readouterr().err == ""
    with announce("building a table", enabled=True):
        pass
    assert capsys.readouterr().err == "capeval: building a table\n"


def test_the_cli_has_quiet_on_every_command():
    from capeval.cli import _command_parsers, build_parser

    assert all("--quiet" in p._option_string_actions and "--wide" in p._option_string_actions
               for p in _command_parsers(build_parser()))
