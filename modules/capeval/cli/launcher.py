"""``python -m capeval.cli.launcher ARGS``: ``accelerate launch ARGS`` as ``capeval score --processes N`` runs it, quiet
when it is stopped: Ctrl-C or SIGTERM end it with the status 128 + the signal and no traceback or warning lines
from torch's elastic agent (it still stops its processes first); every other message and error is as accelerate
prints it. The one line about the interruption comes from the ``capeval`` process that started it."""
from __future__ import annotations

import logging
import sys


def main(argv: list[str]) -> int:
    from accelerate.commands.launch import main as accelerate_launch
    from torch.distributed.elastic.multiprocessing.api import SignalException

    import torch.distributed.run  # noqa: F401  (creates the elastic agent's loggers, each with its own level)

    for name in list(logging.root.manager.loggerDict):  # "Received 2 death signal", "Sending process N closing ..."
        if name.startswith("torch.distributed.elastic"):
            logging.getLogger(name).setLevel(logging.ERROR)
    sys.argv = ["accelerate launch", *argv]
    try:
        accelerate_launch()
    except SignalException as err:
        return 128 + int(err.sigval)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
