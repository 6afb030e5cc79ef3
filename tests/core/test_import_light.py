"""Nothing heavy at import time: importing capeval's modules reads no data file and loads no model."""
from __future__ import annotations

import subprocess
import sys


def test_importing_the_thumb_tables_and_the_judges_reads_nothing():
    code = ("import builtins, io, sys\n"
            "opened = []\n"
            "real = io.open\n"
            "def spy(file, *a, **k):\n"
            "    opened.append(str(file))\n"
            "    return real(file, *a, **k)\n"
            "builtins.open = io.open = spy\n"
            "import capeval.thumb.published, capeval.judges.judge, capeval.judges.metric\n"
            "print([f for f in opened if f.endswith(('.json', '.csv', '.txt', '.gz'))])\n"
            "print('transformers' in sys.modules, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    files, heavy = done.stdout.strip().splitlines()
    assert files == "[]" and heavy == "False False", done.stdout


def test_the_thumb_tables_are_there_when_asked_for():
    from capeval.thumb import published

    assert published.TABLE3 and all(len(v) == 2 for v in published.TABLE3.values())
    assert published.TABLE2 is published.TABLE2  # read once
