"""Every image a user may pass, through every entry point that takes images: the table of issue 30 item 1.

Usage: PYTHONPATH=modules python benchmarks/image_inputs.py [--metric critic] [--markdown FILE]

For each case of :func:`capeval.models.image_cases.image_cases` (files, bytes, PIL images, arrays, ``datasets.Image``
values, broken files, a URL) it runs ``capeval.score(images=[item])``, the ``learned_critic`` evaluate module, the
CLI (``capeval score --images LIST``, file cases only) and the Space callback (file cases only), and prints the score
or the first line of the error with the seconds it took. ``capeval bench`` reads its benchmarks' own images and takes
no user images, so it has no column. Nothing is downloaded.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRED, REFS = "a picture with a round shape", ["a colourful picture with a disc in the middle"]


def _cell(run) -> str:
    started = time.monotonic()
    try:
        value = run()
        text = f"{value:.3f}"
    except Exception as err:  # noqa: BLE001 - the table shows what each entry point says
        text = f"{type(err).__name__}: {str(err).splitlines()[0][:110]}"
    return f"{text} ({time.monotonic() - started:.1f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metric", default="critic", choices=["critic", "critic_img", "critic_plus"])
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    import evaluate

    import capeval
    from capeval.cli import main as cli
    from capeval.hf.space_inputs import score_image_captions
    from capeval.models.image_cases import image_cases

    metric = args.metric
    module = evaluate.load(str(ROOT / "metrics" / "learned_critic"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cases = image_cases(tmp / "cases")
        (tmp / "p.json").write_text(json.dumps([PRED]))
        (tmp / "r.json").write_text(json.dumps([REFS]))
        capeval.score([PRED], [REFS], metrics=[metric], images=[cases[0].item])  # models loaded before timing

        def run_cli(path: str) -> float:
            (tmp / "images.txt").write_text(path + "\n")
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                rc = cli(["score", "--predictions", str(tmp / "p.json"), "--references", str(tmp / "r.json"),
                          "--metrics", metric, "--images", str(tmp / "images.txt"), "--json", "-"])
            if rc:
                raise RuntimeError(err.getvalue().strip().splitlines()[-1])
            return json.loads(out.getvalue())[metric]

        def run_space(path: str) -> float:
            compute = lambda **kw: capeval.score(kw.pop("predictions"), kw.pop("references"), **kw)  # noqa: E731
            rows, _, _ = score_image_captions(compute, [metric], [path], PRED, " | ".join(REFS), metrics=[metric])
            return rows[0][1]

        lines = ["| image input | expected | capeval.score | evaluate module | CLI --images | Space |",
                 "|---|---|---|---|---|---|"]
        for case in cases:
            row = [case.name, case.expect,
                   _cell(lambda: capeval.score([PRED], [REFS], metrics=[metric], images=[case.item])[metric]),
                   _cell(lambda: module.compute(predictions=[PRED], references=[REFS], images=[case.item],
                                                metrics=metric)[metric]),
                   _cell(lambda: run_cli(case.item)) if case.is_file else "—",
                   _cell(lambda: run_space(case.item)) if case.is_file else "—"]
            row = [cell.replace(str(tmp) + "/", "…/").replace("|", "\\|") for cell in row]
            lines.append("| " + " | ".join(row) + " |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
