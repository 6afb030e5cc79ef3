"""``python -m capeval.cli.launcher ARGS``: ``accelerate launch ARGS`` as ``capeval score --processes N`` runs it, quiet
when it is stopped or a process fails: Ctrl-C or SIGTERM end it with the status 128 + the signal, a failed process
with that process's exit status, and no traceback, report or warning lines from torch's elastic agent (it still stops
its processes first); capeval's processes have said their one line (``capeval COMMAND: error: ...``). Every other
message is as accelerate prints it. The one line about an interruption comes from the ``capeval`` process that
started it."""
from __future__ import annotations

import logging
import sys


def main(argv: list[str]) -> int:
    from accelerate.commands.launch import main as accelerate_launch
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    import torch.distributed.run  # noqa: F401  (creates the elastic agent's loggers, each with its own level)

    for name in list(logging.root.manager.loggerDict):  # "Received 2 death signal", "Sending process N closing ..."
        if name.startswith("torch.distributed.elastic"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    sys.argv = ["accelerate launch", *argv]
    try:
        accelerate_launch()
    except SignalException as err:
        return 128 + int(err.sigval)
    except KeyboardInterrupt:
        return 130
    except ChildFailedError as err:  # the process said why; the agent's report would bury its line
        codes = [failure.exitcode for failure in err.failures.values() if failure.exitcode]
        return next((code for code in codes if code > 0), 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
