#!/usr/bin/env python
"""Issue 54 rerun: the hostile-input probes against capeval's doors, built and run as one set.

Every hostile file is built here, in a temporary folder (the user's files are never touched; ``CAPEVAL_CACHE_DIR``
points into it too). Each probe is one small function that runs a door with one hostile case and classifies the
outcome:

* refusal probes pass when the exit status is non-zero, stderr holds no ``Traceback`` (nor ``MemoryError``), and
  the error is short (at most 3 lines) and names the item / file; in-process doors (``capeval.score``, the loaders,
  the evaluate module, the Space's scoring function) must raise one short exception naming the item;
* "must score" probes pass when the numbers come out and equal a clean run's;
* security probes pass when nothing leaks (the token never printed, a redirect target receives no request, nothing
  outside the image root uploaded: the fake Label Studio receives nothing).

Every CLI probe is a subprocess with a timeout (a hang fails) under an address-space cap (``RLIMIT_AS``, set in
``preexec_fn``; a ``MemoryError`` or a kill fails). The in-process probes run under the same cap (set on this
process) and in a thread with a timeout. The cap is 8 GiB by default, not 4: torch + pyarrow alone reserve about
5.7 GB of address space for a critic run (1.1 GB resident), and pyarrow does not load under 4 GiB; a 20000×1 strip
resized unbounded to 5,120,000×256 would need 3.9 GB more, which the cap refuses.

    python benchmarks/hostile_probes.py                 # every probe (about 5 minutes on 2 cores)
    python benchmarks/hostile_probes.py --quick         # without the slow probe (200,000 captions)
    python benchmarks/hostile_probes.py --only thumb    # probes whose id / door / case contains "thumb"
    python benchmarks/hostile_probes.py --list          # the probes, not run
    python benchmarks/hostile_probes.py --json out.json # also the outcomes as JSON

Exit status 1 when any probe fails. The fake Label Studio is the tests' stand-in (tests/support/fake_label_studio.py);
the image metric is the bundled critic (critic-flickr8k-joint, offline).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import random
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import textwrap
import traceback
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # support.fake_label_studio: the tests' stand-in of Label Studio's API

GIB = 1 << 30
MEM_CAP = 8 * GIB
TIMEOUT = 120
WIDTH = 100
COLOUR = (30, 160, 60)
CAPTION = "a green field of grass"
REFERENCE = "a field of green grass"


# ------------------------------------------------------------------------------------------------ plumbing


@dataclass
class Probe:
    id: str
    door: str
    case: str
    expected: str
    run: Callable[["Context"], "Outcome"]
    slow: bool = False


@dataclass
class Outcome:
    passed: bool
    outcome: str
    detail: str = ""  # the command and its stderr (or the exception), for the report of a failure


@dataclass
class Run:
    argv: list[str]
    env: dict[str, str]
    rc: int | None
    out: str
    err: str
    timed_out: bool
    seconds: float

    @property
    def command(self) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        words = ["capeval", *self.argv[3:]] if self.argv[1:3] == ["-m", "capeval"] else self.argv
        return (env + " " if env else "") + shlex.join(words)

    def report(self) -> str:
        status = "timed out" if self.timed_out else f"exit {self.rc}"
        return f"$ {self.command}\n[{status}, {self.seconds:.1f} s]\nstderr:\n{self.err.rstrip()}\n" + (
            f"stdout (tail):\n{self.out.rstrip()[-1500:]}\n" if self.out.strip() and self.rc != 0 else "")


class Context:
    """The temporary folder, the environment of the subprocesses, and what several probes share (built once)."""

    def __init__(self, tmp: Path, cap: int) -> None:
        self.tmp = tmp
        self.cap = cap
        self.cache = tmp / "cache"
        self.env = {**os.environ, "CAPEVAL_CACHE_DIR": str(self.cache), "CAPEVAL_DEBUG": "", "COLUMNS": "100",
                    "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
                    "TRANSFORMERS_OFFLINE": "1", "PYTHONWARNINGS": ""}
        self.env.pop("CAPEVAL_MAX_INPUT_BYTES", None)
        self.env.pop("LABEL_STUDIO_API_KEY", None)
        self._shared: dict[str, Any] = {}
        self._lock = threading.RLock()

    def shared(self, name: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            if name not in self._shared:
                self._shared[name] = build()
            return self._shared[name]

    def folder(self, name: str) -> Path:
        path = self.tmp / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _limit(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.cap, self.cap))

    def cli(self, *args: Any, env: dict[str, str] | None = None, timeout: float = TIMEOUT) -> Run:
        """``python -m capeval ARGS`` under the memory cap, in its own session (its workers killed on a timeout)."""
        argv = [sys.executable, "-m", "capeval", *map(str, args)]
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                cwd=self.tmp, env={**self.env, **(env or {})}, preexec_fn=self._limit,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            timed_out = True
        return Run(argv, env or {}, proc.returncode, out, err, timed_out, time.monotonic() - start)

    def popen(self, *args: Any, env: dict[str, str] | None = None) -> subprocess.Popen:
        argv = [sys.executable, "-m", "capeval", *map(str, args)]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                cwd=self.tmp, env={**self.env, **(env or {})}, preexec_fn=self._limit,
                                start_new_session=True)


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def short(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def brief(text: str, names: list[str]) -> str:
    """``text`` with the long file names of ``names`` shortened to their last part (for the table)."""
    for name in sorted(names, key=len, reverse=True):
        if name.startswith("/") and not name.startswith("/dev/"):
            text = text.replace(name, Path(name).name)
    return text


def refused(run: Run, names: list[str], words: tuple[str, ...] = ()) -> Outcome:
    """A refusal: non-zero exit, no traceback, at most 3 lines of stderr, naming one of ``names``."""
    problems = []
    err = run.err
    if run.timed_out:
        problems.append(f"hang: no answer after {run.seconds:.0f} s")
    elif run.rc is None or run.rc < 0:
        problems.append(f"killed by signal {-(run.rc or 0)}")
    elif run.rc == 0:
        problems.append("exit 0: accepted")
    if "Traceback" in err:
        problems.append("a traceback")
    if "MemoryError" in err:
        problems.append("MemoryError")
    if len(lines_of(err)) > 3:
        problems.append(f"{len(lines_of(err))} lines of stderr")
    if names and not any(n in err for n in names):
        problems.append(f"does not name {names[0]}")
    for word in words:
        if word not in err:
            problems.append(f"lacks {word!r}")
    last = lines_of(err)[-1] if lines_of(err) else "(no stderr)"
    if problems:
        return Outcome(False, "; ".join(problems) + f" | {short(last, 80)}", run.report())
    return Outcome(True, f"exit {run.rc}: {short(brief(last.split('error: ', 1)[-1], names), 120)}")


def clean_run(run: Run, max_lines: int = 3) -> list[str]:
    """What is wrong with a run that must succeed (empty: nothing)."""
    problems = []
    if run.timed_out:
        problems.append(f"hang: no answer after {run.seconds:.0f} s")
    elif run.rc != 0:
        problems.append(f"exit {run.rc}")
    if "Traceback" in run.err:
        problems.append("a traceback")
    if "MemoryError" in run.err:
        problems.append("MemoryError")
    if len(lines_of(run.err)) > max_lines:
        problems.append(f"{len(lines_of(run.err))} lines of stderr")
    return problems


def within(seconds: float, call: Callable[[], Any], unblock: Callable[[], None] | None = None):
    """``(value, exception, hung)`` of ``call()`` in a thread, given up after ``seconds``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as err:  # noqa: BLE001 - classified by the caller
            box["err"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if unblock is not None:
            unblock()
            thread.join(5)
        return None, None, True
    return box.get("value"), box.get("err"), False


def unblock_fifo(path: Path) -> Callable[[], None]:
    def unblock() -> None:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    return unblock


def api_refused(what: str, call: Callable[[], Any], names: list[str], seconds: float = 60,
                unblock: Callable[[], None] | None = None, words: tuple[str, ...] = ()) -> Outcome:
    """An in-process refusal: one short exception (not MemoryError) naming the item, within ``seconds``."""
    value, err, hung = within(seconds, call, unblock)
    if hung:
        return Outcome(False, f"hang: no answer after {seconds:.0f} s", what)
    if err is None:
        return Outcome(False, f"accepted: {short(repr(value), 60)}", what)
    text = str(err)
    problems = []
    if isinstance(err, MemoryError):
        problems.append("MemoryError")
    elif not isinstance(err, (ValueError, OSError, TypeError)):
        problems.append(f"{type(err).__name__}")
    if len(lines_of(text)) > 3:
        problems.append(f"{len(lines_of(text))} lines")
    if names and not any(n in text for n in names):
        problems.append(f"does not name {names[0]}")
    for word in words:
        if word not in text:
            problems.append(f"lacks {word!r}")
    if problems:
        tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        return Outcome(False, "; ".join(problems) + f" | {short(text, 80)}", f"{what}\n{tb}")
    return Outcome(True, f"{type(err).__name__}: {short(brief(text, names), 120)}")


def damage_middle(path: Path) -> None:
    """4 KB of random bytes at the middle of ``path`` (as the tests do)."""
    size = path.stat().st_size
    rng = random.Random(54)
    with path.open("r+b") as handle:
        handle.seek(size // 2)
        handle.write(bytes(rng.randrange(256) for _ in range(4096)))


def close(a: float, b: float, tol: float = 1e-6) -> bool:
    return a is not None and b is not None and math.isfinite(a) and abs(a - b) <= tol


# ------------------------------------------------------------------------------------------------ hostile images


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def bomb_png(path: Path, width: int, height: int) -> Path:
    """A PNG whose header declares ``width``×``height`` pixels (a few hundred bytes of file)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 1024)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat)
                     + png_chunk(b"IEND", b""))
    return path


@dataclass
class ImageCase:
    name: str
    path: str
    scores: bool  # True: must be scored (its value equals the solid square's); False: must be refused
    names: list[str] = field(default_factory=list)


IMAGE_CASES = ["strip 20000x1", "strip 50000x1", "strip 1x20000", "/dev/zero", "FIFO", "directory",
               "text named .png", "truncated PNG", "0-byte file", "bomb header 100k²", "symlink to /dev/zero",
               "sparse 300 MiB"]


def build_images(ctx: Context) -> dict[str, ImageCase]:
    from PIL import Image

    d = ctx.folder("images")
    cases: dict[str, ImageCase] = {}

    def add(name: str, path: Path | str, scores: bool = False) -> None:
        cases[name] = ImageCase(name, str(path), scores, [str(path), Path(path).name])

    for name, size in (("strip 20000x1", (20000, 1)), ("strip 50000x1", (50000, 1)), ("strip 1x20000", (1, 20000))):
        path = d / f"strip-{size[0]}x{size[1]}.png"
        Image.new("RGB", size, COLOUR).save(path)
        add(name, path, True)
    Image.new("RGB", (224, 224), COLOUR).save(d / "square.png")  # the clean run: the same pixels reach the encoder
    add("/dev/zero", "/dev/zero")
    os.mkfifo(d / "pipe.png")
    add("FIFO", d / "pipe.png")
    (d / "folder.png").mkdir()
    add("directory", d / "folder.png")
    (d / "notes.png").write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    add("text named .png", d / "notes.png")
    noise = Image.frombytes("RGB", (128, 128), random.Random(1).randbytes(128 * 128 * 3))
    noise.save(d / "whole.png")
    data = (d / "whole.png").read_bytes()
    (d / "truncated.png").write_bytes(data[: len(data) // 2])
    add("truncated PNG", d / "truncated.png")
    (d / "empty.png").write_bytes(b"")
    add("0-byte file", d / "empty.png")
    bomb_png(d / "bomb.png", 100_000, 100_000)
    add("bomb header 100k²", d / "bomb.png")
    (d / "zero.png").symlink_to("/dev/zero")
    add("symlink to /dev/zero", d / "zero.png")
    with (d / "sparse.png").open("wb") as handle:
        handle.write(data[:64])
        handle.truncate(300 * 1024 * 1024)  # sparse: no disk used, over the 256 MiB image limit
    add("sparse 300 MiB", d / "sparse.png")
    return cases


def critic_score(image: str) -> float:
    import capeval

    out = capeval.score([CAPTION], [[REFERENCE]], metrics="critic", images=[image], language_check=False)
    return float(out["critic"])


def square_score(ctx: Context) -> float:
    return ctx.shared("square score", lambda: critic_score(str(ctx.tmp / "images" / "square.png")))


def images_of(ctx: Context) -> dict[str, ImageCase]:
    return ctx.shared("images", lambda: build_images(ctx))


def api_strip_score(ctx: Context, case: ImageCase) -> float:
    return ctx.shared(f"api {case.name}", lambda: critic_score(case.path))


def image_api_probe(name: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        case = images_of(ctx)[name]
        what = f"capeval.score([{CAPTION!r}], [[{REFERENCE!r}]], metrics='critic', images=[{case.path!r}])"
        if case.scores:
            value, err, hung = within(TIMEOUT, lambda: api_strip_score(ctx, case))
            if hung or err is not None:
                tb = "" if err is None else "".join(traceback.format_exception(type(err), err, err.__traceback__))
                return Outcome(False, "hang" if hung else f"{type(err).__name__}: {short(err, 80)}", what + "\n" + tb)
            want = square_score(ctx)
            ok = close(value, want)
            return Outcome(ok, f"critic {value:.6f} (224² square: {want:.6f})", "" if ok else what)
        return api_refused(what, lambda: critic_score(case.path), case.names + ["images[0]"],
                           unblock=unblock_fifo(Path(case.path)) if name == "FIFO" else None)
    return run


def cli_inputs(ctx: Context) -> tuple[Path, Path]:
    def build() -> tuple[Path, Path]:
        d = ctx.folder("cli")
        (d / "p.json").write_text(json.dumps([CAPTION]), encoding="utf-8")
        (d / "r.json").write_text(json.dumps([[REFERENCE]]), encoding="utf-8")
        return d / "p.json", d / "r.json"
    return ctx.shared("cli inputs", build)


def image_cli_probe(name: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        case = images_of(ctx)[name]
        preds, refs = cli_inputs(ctx)
        slug = "".join(c if c.isalnum() else "-" for c in name)
        listing = ctx.folder("cli") / f"images-{slug}.txt"
        listing.write_text(case.path + "\n", encoding="utf-8")
        out = ctx.folder("cli") / f"out-{slug}.json"
        run_ = ctx.cli("score", "--predictions", preds, "--references", refs, "--metrics", "critic", "--images",
                       listing, "--json", out, "--no-language-check", timeout=90)
        if not case.scores:
            return refused(run_, case.names)
        problems = clean_run(run_)
        if problems:
            return Outcome(False, "; ".join(problems), run_.report())
        got = json.loads(out.read_text(encoding="utf-8"))["critic"]
        want = api_strip_score(ctx, case)
        ok = close(got, want)
        return Outcome(ok, f"critic {got:.6f} (API: {want:.6f})", "" if ok else run_.report())
    return run


def dataset_images_run(ctx: Context) -> tuple[Run, dict, dict]:
    """One score-dataset run over a row per image case (``--on-error skip``): (run, result.json, shard columns)."""
    def build():
        cases = images_of(ctx)
        d = ctx.folder("dataset-images")
        rows = [{"id": name, "prediction": CAPTION, "references": [REFERENCE], "image": case.path}
                for name, case in cases.items()]
        data = d / "rows.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        out = d / "out"
        run_ = ctx.cli("score-dataset", data, "--out", out, "--metrics", "critic", "--image-column", "image",
                       "--on-error", "skip", "--chunk-size", "4", "--no-language-check", timeout=180)
        result = json.loads((out / "result.json").read_text(encoding="utf-8")) if (out / "result.json").is_file() \
            else {}
        columns: dict = {}
        if (out / "shards").is_dir():
            import pyarrow.dataset as ds

            columns = ds.dataset(str(out / "shards"), format="parquet").to_table().to_pydict()
        return run_, result, columns
    return ctx.shared("dataset images", build)


def image_dataset_probe(name: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        case = images_of(ctx)[name]
        run_, result, columns = dataset_images_run(ctx)
        problems = clean_run(run_, max_lines=20)  # one warning line per skipped row is allowed
        if problems:
            return Outcome(False, "; ".join(problems), run_.report())
        skipped = {r["id"]: r for r in result.get("skipped", {}).get("rows", [])}
        if case.scores:
            if name in skipped:
                return Outcome(False, f"skipped: {short(skipped[name]['why'], 80)}", run_.report())
            ids = columns.get("id", [])
            if name not in ids or "critic" not in columns:
                return Outcome(False, f"no score for the row (columns {sorted(columns)})", run_.report())
            got = columns["critic"][ids.index(name)]
            want = api_strip_score(ctx, case)
            ok = close(got, want)
            return Outcome(ok, f"critic {got:.6f} (API: {want:.6f})", "" if ok else run_.report())
        if name not in skipped:
            return Outcome(False, "not skipped: scored", run_.report())
        why = skipped[name].get("why", "")
        problems = []
        if "\n" in why.strip():
            problems.append("several lines")
        if not any(n in why for n in case.names):
            problems.append(f"does not name {case.names[0]}")
        if "Traceback" in why or "MemoryError" in why:
            problems.append("traceback / MemoryError")
        if problems:
            return Outcome(False, "; ".join(problems) + f" | {short(why, 80)}", run_.report())
        return Outcome(True, f"skipped (row {skipped[name]['row']}): {short(why, 100)}")
    return run


def evaluate_module(ctx: Context):
    def load():
        import evaluate

        with contextlib.chdir(ROOT):
            return evaluate.load(str(ROOT / "metrics" / "learned_critic"))
    return ctx.shared("evaluate module", load)


def image_module_probe(name: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        case = images_of(ctx)[name]
        module = evaluate_module(ctx)
        what = f"evaluate.load('metrics/learned_critic').compute(..., images=[{case.path!r}], metrics=['critic'])"

        def call():
            return module.compute(predictions=[CAPTION], references=[[REFERENCE]], images=[case.path],
                                  metrics=["critic"])["critic"]
        if not case.scores:
            return api_refused(what, call, case.names + ["images[0]"],
                               unblock=unblock_fifo(Path(case.path)) if name == "FIFO" else None)
        value, err, hung = within(TIMEOUT, call)
        if hung or err is not None:
            return Outcome(False, "hang" if hung else f"{type(err).__name__}: {short(err, 80)}", what)
        want = api_strip_score(ctx, case)
        ok = close(value, want)
        return Outcome(ok, f"critic {value:.6f} (API: {want:.6f})", "" if ok else what)
    return run


def image_space_probe(name: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        from capeval.hf.space_inputs import score_image_captions

        case = images_of(ctx)[name]
        module = evaluate_module(ctx)
        what = (f"capeval.hf.space_inputs.score_image_captions(module.compute, ['critic', 'critic_ref', 'critic_img'], "
                f"[{case.path!r}], {CAPTION!r}, {REFERENCE!r}, ['critic'])  # metrics/learned_critic/app.py's scoring")

        def call():
            return score_image_captions(module.compute, ["critic", "critic_ref", "critic_img"], [case.path], CAPTION,
                                        REFERENCE, ["critic"])
        if not case.scores:
            return api_refused(what, call, [Path(case.path).name, "Image 1"],
                               unblock=unblock_fifo(Path(case.path)) if name == "FIFO" else None)
        value, err, hung = within(TIMEOUT, call)
        if hung or err is not None:
            return Outcome(False, "hang" if hung else f"{type(err).__name__}: {short(err, 80)}", what)
        corpus = dict((row[0], row[1]) for row in value[0])
        want = api_strip_score(ctx, case)
        ok = "critic" in corpus and abs(corpus["critic"] - want) <= 1e-4  # the page rounds to 4 digits
        return Outcome(ok, f"critic {corpus.get('critic')} (API: {want:.6f})", "" if ok else what)
    return run


# ----------------------------------------------------------------------------------- prediction / reference files


TEXT_CASES = ["/dev/zero", "FIFO", "invalid UTF-8", "key twice", "nested 100k deep", "over MAX_INPUT_BYTES",
              "empty file", "NUL bytes", "COCO image id twice"]


def text_case(ctx: Context, name: str, side: str) -> tuple[str, dict[str, str], list[str], tuple[str, ...]]:
    """``(path, extra environment, names, words)`` of a hostile prediction / reference file, built fresh."""
    d = ctx.folder(f"texts-{side}")
    slug = "".join(c if c.isalnum() else "-" for c in name)
    path = d / f"{slug}.json"
    env: dict[str, str] = {}
    words: tuple[str, ...] = ()
    if name == "/dev/zero":
        return "/dev/zero", env, ["/dev/zero"], ()
    if name == "FIFO":
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.mkfifo(path)
        words = ("FIFO",)
    elif name == "invalid UTF-8":
        path.write_bytes(b'[\n"a dog",\n"a caf\xe9"\n]' if side == "predictions" else b'[\n["a dog"],\n["a caf\xe9"]\n]')
        words = ("UTF-8",)
    elif name == "key twice":
        path.write_text('{"1": ["a dog"], "1": ["a cat"]}', encoding="utf-8")
        words = ("twice",)
    elif name == "nested 100k deep":
        path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    elif name == "over MAX_INPUT_BYTES":
        path.write_text(json.dumps(["a dog on a beach"] * 100 if side == "predictions" else [["a dog"]] * 100),
                        encoding="utf-8")
        env = {"CAPEVAL_MAX_INPUT_BYTES": "1000"}
        words = ("CAPEVAL_MAX_INPUT_BYTES",)
    elif name == "empty file":
        path.write_bytes(b"")
    elif name == "NUL bytes":
        path.write_bytes(b"\x00" * 4096)
    elif name == "COCO image id twice":
        path.write_text(json.dumps([{"image_id": 1, "caption": "a dog"}, {"image_id": 1, "caption": "a cat"}]),
                        encoding="utf-8")
        words = ("image id 1",)
    return str(path), env, [str(path), path.name], words


def good_text_files(ctx: Context) -> tuple[Path, Path]:
    def build():
        d = ctx.folder("texts-good")
        (d / "preds.json").write_text(json.dumps({"1": "a dog"}), encoding="utf-8")
        (d / "refs.json").write_text(json.dumps({"1": ["a dog"]}), encoding="utf-8")
        return d / "preds.json", d / "refs.json"
    return ctx.shared("good texts", build)


def text_cli_probe(name: str, side: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        path, env, names, words = text_case(ctx, name, side)
        preds, refs = good_text_files(ctx)
        args = ["--predictions", path, "--references", refs] if side == "predictions" else \
            ["--predictions", preds, "--references", path]
        return refused(ctx.cli("score", *args, "--metrics", "bleu", "--no-language-check", env=env, timeout=60),
                       names, words)
    return run


def text_loader_probe(name: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        from capeval.io import load_predictions

        path, env, names, words = text_case(ctx, name, "loader")
        what = (" ".join(f"{k}={v}" for k, v in env.items()) + " " if env else "") + \
            f"capeval.io.load_predictions({path!r})"
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            return api_refused(what, lambda: load_predictions(path), names, seconds=30,
                               unblock=unblock_fifo(Path(path)) if name == "FIFO" else None, words=words)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return run


# ------------------------------------------------------------------------------------------------ thumb push


SYSTEMS_JSON = ROOT / "tests" / "fixtures" / "thumb" / "systems.json"


def small_png(path: Path, k: int = 0) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4 + k, 3), (10 * k, 20, 30)).save(path, format="PNG")
    return path


PUSH_CASES = ["../ escape", "%2e%2e/ escape", "absolute path elsewhere", "file:// URL", "symlink out of root",
              "FIFO", "/dev/zero", "text named .png", "oversize: 10⁴×10⁴ px header", "oversize: 65 MiB file"]


def push_sheet(ctx: Context) -> tuple[Path, Path, dict[str, tuple[str, list[str]]]]:
    """A Label Studio sheet folder (4 real PNGs under imgs/) and the hostile image values."""
    def build():
        from capeval.thumb.workflow import make_sheets

        base = ctx.folder("push")
        folder = base / "sheet"
        for k in range(1, 5):
            small_png(folder / "imgs" / f"img-10{k}.png", k)
        make_sheets([SYSTEMS_JSON], folder, label_studio=True, image_url="imgs/{image}.png")
        secret = small_png(base / "secret.png", 9)  # a real image, outside the sheet folder
        imgs = folder / "imgs"
        (imgs / "link.png").symlink_to(secret)
        os.mkfifo(imgs / "fifo.png")
        (imgs / "passwd.png").write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
        bomb_png(imgs / "huge.png", 10_000, 10_000)
        with (imgs / "big.png").open("wb") as handle:
            handle.write((imgs / "img-101.png").read_bytes())
            handle.truncate(65 * 1024 * 1024)
        values = {
            "../ escape": ("../secret.png", ["outside the image root"]),
            "%2e%2e/ escape": ("%2e%2e/secret.png", ["outside the image root"]),
            "absolute path elsewhere": (str(secret), ["outside the image root"]),
            "file:// URL": (f"file://{secret}", ["outside the image root"]),
            "symlink out of root": ("imgs/link.png", ["outside the image root"]),
            "FIFO": ("imgs/fifo.png", ["not a regular file"]),
            "/dev/zero": ("/dev/zero", ["not a regular file", "outside the image root"]),
            "text named .png": ("imgs/passwd.png", ["not an image"]),
            "oversize: 10⁴×10⁴ px header": ("imgs/huge.png", ["pixels"]),
            "oversize: 65 MiB file": ("imgs/big.png", ["bytes"]),
        }
        return folder, secret, values
    return ctx.shared("push sheet", build)


def thumb_push_probe(name: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        from support.fake_label_studio import PERSONAL_TOKEN, FakeLabelStudio

        folder, secret, values = push_sheet(ctx)
        value, words = values[name]
        tasks_path = folder / "label-studio" / "tasks.json"
        original = ctx.shared("push tasks", lambda: tasks_path.read_text(encoding="utf-8"))
        tasks = json.loads(original)
        tasks[0]["data"]["image"] = value
        tasks_path.write_text(json.dumps(tasks), encoding="utf-8")
        try:
            with FakeLabelStudio() as fake:
                run_ = ctx.cli("thumb", "push", folder, "--label-studio", fake.url, "--token", PERSONAL_TOKEN,
                               timeout=60)
                received = list(fake.state.requests)
                uploads = list(fake.state.uploads.values())
        finally:
            tasks_path.write_text(original, encoding="utf-8")
        outcome = refused(run_, [value, Path(value).name], ("nothing sent",))
        problems = []
        if received or uploads:
            problems.append(f"the server received {len(received)} request(s), {len(uploads)} upload(s)")
        if PERSONAL_TOKEN in run_.out + run_.err:
            problems.append("the token printed")
        if not any(w in run_.err for w in words):
            problems.append(f"lacks {words[0]!r}")
        if problems:
            return Outcome(False, "; ".join(problems) + " | " + outcome.outcome, run_.report())
        if outcome.passed:
            outcome.outcome = "nothing sent; " + outcome.outcome
        return outcome
    return run


# ---------------------------------------------------------------------------------------- Label Studio client


from support.local_server import Server, answer, redirect  # noqa: E402 (tests/ is on sys.path above)


def ls_redirect_probe(kind: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        from support.fake_label_studio import LEGACY_TOKEN, PERSONAL_TOKEN

        token = LEGACY_TOKEN if kind == "legacy" else PERSONAL_TOKEN
        with Server(lambda h, b: answer(h, 200, [{"id": 7, "email": "ann1@example.org"}])) as other:
            with Server(lambda h, b: redirect(h, 307, other.url + h.path)) as first:
                run_ = ctx.cli("thumb", "status", "--label-studio", first.url, "--token", token, "--project", "1",
                               timeout=60)
            got = list(other.received)
        outcome = refused(run_, [first.url, other.url], ("another origin",))
        problems = []
        if any("Authorization" in headers for _, _, headers in got):
            problems.append("the other server received the Authorization header")
        elif got:
            problems.append(f"the other server received {len(got)} request(s)")
        if token in run_.out + run_.err:
            problems.append("the token printed")
        if problems:
            return Outcome(False, "; ".join(problems) + " | " + outcome.outcome, run_.report())
        if outcome.passed:
            outcome.outcome = "other port received nothing; " + outcome.outcome
        return outcome
    return run


def ls_echo_probe(kind: str, project: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        from support.fake_label_studio import LEGACY_TOKEN, PERSONAL_TOKEN, jwt

        token = LEGACY_TOKEN if kind == "legacy" else PERSONAL_TOKEN
        access = jwt({"token_type": "access", "jti": "echoed-access-token-0123456789"})

        def echo(handler, body: bytes) -> None:
            if handler.path == "/api/token/refresh/":
                answer(handler, 200, {"access": access})
                return
            auth = handler.headers.get("Authorization", "")
            if handler.path.startswith("/api/users/"):
                answer(handler, 400, {"detail": "x" * 280 + f" you sent {auth}"})
            elif handler.path.startswith("/api/projects/1/"):
                answer(handler, 400, f"plain text: Authorization: {auth}; body {body[:80]!r}".encode())
            else:
                answer(handler, 400, {"detail": f"bad header {auth}"}, reason=f"Bad {auth.split()[-1]}")

        with Server(echo) as server:
            run_ = ctx.cli("thumb", "status", "--label-studio", server.url, "--token", token, "--project", project,
                           timeout=60)
        outcome = refused(run_, [server.url])
        text = run_.out + run_.err
        leaks = [s for s in (token, access) if s in text or s[:24] in text or s[-24:] in text]
        if leaks:
            return Outcome(False, "the token (or 24 characters of it) printed | " + outcome.outcome, run_.report())
        if outcome.passed:
            outcome.outcome = "no token in the output; " + outcome.outcome
        return outcome
    return run


def ls_userinfo_probe(step: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        from support.fake_label_studio import LEGACY_TOKEN, FakeLabelStudio

        with FakeLabelStudio() as fake:
            url = fake.url.replace("http://", "http://ann:s3cret-pass@")
            if step == "status":
                run_ = ctx.cli("thumb", "status", "--label-studio", url, "--token", LEGACY_TOKEN, "--project", "1",
                               timeout=60)
            else:
                folder, _, _ = push_sheet(ctx)
                run_ = ctx.cli("thumb", "push", folder, "--label-studio", url, "--token", LEGACY_TOKEN, timeout=60)
        text = run_.out + run_.err
        problems = [p for p in ("s3cret-pass", "ann:", LEGACY_TOKEN) if p in text]
        if "Traceback" in run_.err:
            problems.append("a traceback")
        if run_.timed_out:
            problems.append("hang")
        if len(lines_of(run_.err)) > 3:
            problems.append(f"{len(lines_of(run_.err))} lines of stderr")
        last = lines_of(run_.err)[-1] if lines_of(run_.err) else "(no stderr)"
        if problems:
            return Outcome(False, "printed / wrong: " + ", ".join(problems) + f" | {short(last, 60)}", run_.report())
        return Outcome(True, f"exit {run_.rc}, no password: {short(last.split('error: ', 1)[-1], 100)}")
    return run


# ------------------------------------------------------------------------------------------------ caches


def cache_captions(n: int = 81) -> tuple[list[str], list[list[str]]]:
    candidates = [f"a {c} dog is running on the {p} grass near a {t} tree" for c in ("black", "brown", "white")
                  for p in ("green", "wet", "long") for t in ("tall", "small", "old")] * 3
    candidates = [f"{c} number {i}" for i, c in enumerate(candidates[:n])]
    references = [["a dog runs on the grass", "a black dog is running near a tree"]] * len(candidates)
    return candidates, references


def cache_cli_files(ctx: Context) -> tuple[Path, Path]:
    def build():
        d = ctx.folder("caches")
        c, r = cache_captions()
        (d / "preds.json").write_text(json.dumps(c), encoding="utf-8")
        (d / "refs.json").write_text(json.dumps(r), encoding="utf-8")
        return d / "preds.json", d / "refs.json"
    return ctx.shared("cache files", build)


def cache_damage_probe(metric: str, relative: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        preds, refs = cache_cli_files(ctx)
        cache = ctx.tmp / f"cache-{metric}"
        env = {"CAPEVAL_CACHE_DIR": str(cache)}
        outs = [ctx.folder("caches") / f"{metric}-{k}.json" for k in range(3)]

        def score(k: int) -> Run:
            return ctx.cli("score", "--predictions", preds, "--references", refs, "--metrics", metric, "--json",
                           outs[k], "--no-language-check", "--quiet", env=env, timeout=180)
        first = score(0)
        problems = clean_run(first, max_lines=6)
        if problems:
            return Outcome(False, "clean run: " + "; ".join(problems), first.report())
        path = cache / relative
        if not path.is_file() or path.stat().st_size <= 3 * 4096:
            return Outcome(False, f"{relative}: {path.stat().st_size if path.is_file() else 'no'} bytes after a run",
                           first.report())
        damage_middle(path)
        second = score(1)
        problems = clean_run(second, max_lines=3)
        warned = [line for line in lines_of(second.err) if "Warning" in line or "warning" in line
                  or "moved aside" in line or "damaged" in line]
        if len(warned) > 1:
            problems.append(f"{len(warned)} warnings")
        if not problems:
            a = json.loads(outs[0].read_text(encoding="utf-8"))
            b = json.loads(outs[1].read_text(encoding="utf-8"))
            if a.get("per_caption") != b.get("per_caption") or a.get(metric) != b.get(metric):
                problems.append("numbers differ from the clean run")
        if problems:
            return Outcome(False, "; ".join(problems), second.report())
        third = score(2)
        quiet = not [x for x in lines_of(third.err) if not x.startswith("wrote ")] and json.loads(outs[2].read_text(encoding="utf-8")).get(metric) == \
            json.loads(outs[0].read_text(encoding="utf-8")).get(metric)
        aside = len(list(path.parent.glob(path.name + ".corrupt-*")))
        note = f"{len(warned)} warning; same {metric} {json.loads(outs[1].read_text())[metric]:.6f}; moved aside {aside}"
        if not quiet:
            return Outcome(False, note + "; the next run is not silent / not equal", third.report())
        return Outcome(True, note + "; next run silent")
    return run


def cache_read_only_probe(ctx: Context) -> Outcome:
    """A complete SPICE parse cache that cannot be written (simulated as the tests do: root ignores permissions),
    then more captions than it holds: read, the rest kept in memory, the same numbers, one warning."""
    import capeval
    from capeval import sqlite_retry
    from capeval.paths import CacheRebuiltWarning, CacheUnwritableWarning

    cache = ctx.tmp / "cache-readonly"
    saved = os.environ.get("CAPEVAL_CACHE_DIR")
    os.environ["CAPEVAL_CACHE_DIR"] = str(cache)
    what = "capeval.score(81 captions, metrics=['spice']) on a read-only parse cache filled with 40 of them"
    try:
        c, r = cache_captions()
        capeval.score(c[:40], r[:40], metrics=["spice"], language_check=False)  # the cache, complete for these
        clean = capeval.score(c, r, metrics=["spice"], language_check=False)  # the clean numbers (writable)
        shutil.rmtree(cache / "spice")
        capeval.score(c[:40], r[:40], metrics=["spice"], language_check=False)
        path = cache / "spice" / "parses.sqlite"
        before = path.read_bytes()
        real = sqlite_retry.connect_shared

        def refuse(*args, **kwargs):
            import sqlite3

            raise sqlite3.OperationalError("attempt to write a readonly database")
        sqlite_retry.connect_shared = refuse
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                again = capeval.score(c, r, metrics=["spice"], language_check=False)
        finally:
            sqlite_retry.connect_shared = real
        ours = [w for w in caught if issubclass(w.category, (CacheRebuiltWarning, CacheUnwritableWarning))]
        problems = []
        if again["per_caption"]["spice"] != clean["per_caption"]["spice"]:
            problems.append("numbers differ from the clean run")
        if len(ours) != 1:
            problems.append(f"{len(ours)} cache warnings")
        if path.read_bytes() != before:
            problems.append("the read-only file was changed")
        if problems:
            return Outcome(False, "; ".join(problems), what + "\n" + "\n".join(str(w.message) for w in ours))
        return Outcome(True, f"same spice {again['spice']:.6f}; 1 warning: {short(ours[0].message, 70)}")
    except Exception as err:  # noqa: BLE001 - a traceback is the failure
        return Outcome(False, f"{type(err).__name__}: {short(err, 80)}", what + "\n" + traceback.format_exc())
    finally:
        if saved is None:
            os.environ.pop("CAPEVAL_CACHE_DIR", None)
        else:
            os.environ["CAPEVAL_CACHE_DIR"] = saved


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def cache_leftovers_probe(ctx: Context) -> Outcome:
    cache = ctx.tmp / "cache-leftovers"
    env = {"CAPEVAL_CACHE_DIR": str(cache)}
    (cache / "spice").mkdir(parents=True)
    (cache / "spice" / "parses.sqlite").write_bytes(b"p" * 100)
    (cache / "spice" / "parses.sqlite.corrupt-1700000000").write_bytes(b"c" * 2000)
    (cache / "meteor").mkdir()
    killed = cache / "meteor" / f"paraphrase-en-v3-0123.npz.{dead_pid()}.abcd1234.tmp"
    killed.write_bytes(b"t" * 3000)
    listed = ctx.cli("cache", env=env, timeout=60)
    cleared = ctx.cli("cache", "clear", "--leftovers", env=env, timeout=60)
    problems = clean_run(listed) + clean_run(cleared)
    line = next((x for x in listed.out.splitlines() if x.startswith("leftovers")), "")
    if "2 file(s)" not in line:
        problems.append(f"`capeval cache` says {line!r}")
    if list(cache.rglob("*.corrupt-*")) or killed.exists():
        problems.append("leftovers still there")
    if not (cache / "spice" / "parses.sqlite").is_file():
        problems.append("the cache itself was removed")
    if problems:
        return Outcome(False, "; ".join(problems), listed.report() + cleared.report())
    return Outcome(True, f"listed ({short(line, 50)}); {short(lines_of(cleared.out)[-1], 50)}")


def cache_sweep_probe(ctx: Context) -> Outcome:
    """Leftovers swept when capeval opens the cache folder (a run, no `cache clear`)."""
    cache = ctx.tmp / "cache-sweep"
    folder = cache / "spice"
    folder.mkdir(parents=True)
    killed = folder / f"parses.sqlite.{dead_pid()}.abcd1234.tmp"
    killed.write_bytes(b"x" * 1000)
    corrupt = [folder / f"parses.sqlite.corrupt-{1_700_000_000 + i}" for i in range(3)]
    for i, path in enumerate(corrupt):
        path.write_bytes(b"y" * 500)
        os.utime(path, (time.time() - 100 + i,) * 2)
    preds, refs = cache_cli_files(ctx)
    run_ = ctx.cli("score", "--predictions", preds, "--references", refs, "--metrics", "spice", "--no-language-check",
                   "--quiet", env={"CAPEVAL_CACHE_DIR": str(cache)}, timeout=120)
    problems = clean_run(run_)
    left = sorted(p.name for p in folder.iterdir() if ".tmp" in p.name or ".corrupt-" in p.name)
    if left != [corrupt[-1].name]:
        problems.append(f"left: {left}")
    if problems:
        return Outcome(False, "; ".join(problems), run_.report())
    return Outcome(True, "the killed writer's .tmp and the older .corrupt-* swept; the newest kept")


def cider_df_probe(ctx: Context) -> Outcome:
    d = ctx.folder("cider-df")
    rows = dataset_rows(400, seed=5)
    data = d / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = d / "out"
    args = [data, "--out", out, "--metrics", "bleu,cider_d", "--chunk-size", "100", "--no-language-check", "--json",
            d / "first.json"]
    first = ctx.cli("score-dataset", *args, timeout=120)
    problems = clean_run(first)
    table = out / "cider-df.bin"
    if problems or not table.is_file():
        return Outcome(False, "; ".join(problems) or "no cider-df.bin written", first.report())
    size = table.stat().st_size
    with table.open("r+b") as handle:
        handle.seek(size // 2)
        handle.write(bytes(b ^ 0xFF for b in handle.read(64)))
    (out / "result.json").unlink()
    for shard in (out / "shards").glob("part-*.parquet"):
        shard.unlink()
        break
    args[-1] = d / "second.json"
    second = ctx.cli("score-dataset", *args, timeout=120)
    problems = clean_run(second)
    warned = [line for line in lines_of(second.err) if "damaged" in line]
    if len(warned) > 1:
        problems.append(f"{len(warned)} warnings")
    if not problems:
        a = json.loads((d / "first.json").read_text(encoding="utf-8"))
        b = json.loads((d / "second.json").read_text(encoding="utf-8"))
        if a != b:
            problems.append("result differs from the clean run")
    if problems:
        return Outcome(False, "; ".join(problems), second.report())
    return Outcome(True, f"{len(warned)} warning, counted again; same cider_d "
                         f"{json.loads((d / 'second.json').read_text())['cider_d']:.6f}")


# ------------------------------------------------------------------------------------------------ data


WORDS = "a the dog cat man woman runs sits on in with red blue grass field street ball child plays water".split()


def dataset_rows(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)

    def caption() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))

    return [{"id": f"img{i:05d}", "prediction": caption(), "references": [caption() for _ in range(rng.randint(1, 5))]}
            for i in range(n)]


def skip_unreadable_probe(ctx: Context) -> Outcome:
    import capeval
    from capeval.io import example_images

    d = ctx.folder("skip-one")
    photos = example_images()
    rows = []
    for i in range(4):
        name = f"{i}.jpg"
        if i == 2:
            (d / name).write_bytes(b"this is no JPEG")
        else:
            (d / name).write_bytes(Path(photos[i % len(photos)]).read_bytes())
        rows.append({"id": f"photo{i}", "prediction": "a cat sitting on a sofa", "references": ["a cat on a sofa"],
                     "image": name})
    data = d / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run_ = ctx.cli("score-dataset", data, "--out", d / "out", "--metrics", "critic", "--image-column", "image",
                   "--on-error", "skip", "--chunk-size", "2", "--no-language-check", timeout=180)
    problems = clean_run(run_)
    if problems:
        return Outcome(False, "; ".join(problems), run_.report())
    result = json.loads((d / "out" / "result.json").read_text(encoding="utf-8"))
    skipped = result.get("skipped", {}).get("rows", [])
    whole = capeval.score(["a cat sitting on a sofa"] * 3, [["a cat on a sofa"]] * 3, metrics="critic",
                          images=[str(d / f"{i}.jpg") for i in (0, 1, 3)], language_check=False)
    if [(r["row"], r["id"]) for r in skipped] != [(2, "photo2")]:
        problems.append(f"skipped: {[(r['row'], r['id']) for r in skipped]}")
    if result.get("rows") != 3:
        problems.append(f"{result.get('rows')} rows scored")
    if not close(result.get("critic"), whole["critic"], 1e-6):
        problems.append(f"critic {result.get('critic')} != {whole['critic']} (capeval.score of the other rows)")
    if problems:
        return Outcome(False, "; ".join(problems), run_.report())
    return Outcome(True, f"row 2 (photo2) listed: {short(skipped[0]['why'], 50)}; 3 rows = capeval.score")


HOSTILE_CAPTIONS = ['=HYPERLINK("http://x","y")', "-1 dogs", "+1 cats", "@SUM(A1:A2)", "'=quoted already",
                    "''two quotes", "'plain quote", "a dog = a cat"]


def fill_sheet(sheet: Path, out: Path, salt: int, comment: str = "") -> Path:
    """What a spreadsheet keeping text as text writes back: the same cells, the ratings filled in."""
    with sheet.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    for k, row in enumerate(rows[1:]):
        row[3:8] = [str(1 + (k + salt) % 5), str(1 + k % 5), "", "-0.5" if k % 2 else "", ""]
        row[8] = comment
    with out.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return out


def formula_probe(ctx: Context) -> Outcome:
    from capeval.thumb.sheets import FORMULA_TRIGGERS

    d = ctx.folder("formula")
    systems = {"sysA": [{"image": f"=img{k}", "caption": c} for k, c in enumerate(HOSTILE_CAPTIONS)],
               "sysB": [{"image": f"=img{k}", "caption": f"a plain caption {k}"} for k in range(len(HOSTILE_CAPTIONS))]}
    (d / "systems.json").write_text(json.dumps(systems), encoding="utf-8")
    sheet = ctx.cli("thumb", "sheet", d / "systems.json", "--out", d / "s", "--cleanup", "none", timeout=60)
    problems = clean_run(sheet, max_lines=5)
    if problems:
        return Outcome(False, "sheet: " + "; ".join(problems), sheet.report())
    with (d / "s" / "thumb_sheet.csv").open(newline="", encoding="utf-8") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    live = [c for c in cells if c.startswith(FORMULA_TRIGGERS)]
    a = fill_sheet(d / "s" / "thumb_sheet.csv", d / "a.csv", 0)
    b = fill_sheet(d / "s" / "thumb_sheet.csv", d / "b.csv", 1)
    collect = ctx.cli("thumb", "collect", "--key", d / "s" / "thumb_key.json", a, b, "--out", d / "out",
                      "--bootstrap-samples", "0", timeout=60)
    problems = clean_run(collect, max_lines=5)
    if live:
        problems.append(f"{len(live)} live formula cell(s) in the sheet: {short(live[0], 30)}")
    if not problems:
        records = [json.loads(x) for x in (d / "out" / "thumb_scores.jsonl").read_text("utf-8").splitlines()]
        back = sorted(r["hyp"] for r in records if r["SYS"] == "sysA")
        if [c.encode() for c in back] != sorted(c.encode() for c in HOSTILE_CAPTIONS):
            problems.append(f"captions back not byte-identical: {back}")
        with (d / "out" / "thumb_disagreements.csv").open(newline="", encoding="utf-8") as fh:
            if [c for row in csv.reader(fh) for c in row if c.startswith(FORMULA_TRIGGERS)]:
                problems.append("a live formula in thumb_disagreements.csv")
    if problems:
        return Outcome(False, "; ".join(problems), sheet.report() + collect.report())
    return Outcome(True, "no live formula in the CSVs; 8 captions back byte-identical")


def long_comment_probe(ctx: Context) -> Outcome:
    from capeval.thumb.workflow import make_sheets

    d = ctx.folder("long-comment")
    files = make_sheets([SYSTEMS_JSON], d / "s")
    filled = fill_sheet(files.csv, d / "a.csv", 0, comment="long " * 60_000)  # 300,000 characters
    run_ = ctx.cli("thumb", "collect", "--key", files.key, filled, "--out", d / "out", "--bootstrap-samples", "0",
                   timeout=60)
    problems = clean_run(run_, max_lines=5)
    if not problems and not (d / "out" / "thumb_report.json").is_file():
        problems.append("no report")
    if problems:
        return Outcome(False, "; ".join(problems), run_.report())
    return Outcome(True, "collected (a 300,000-character comment > csv's 131,072 field limit)")


def odd_annotator_probe(ctx: Context) -> Outcome:
    from capeval.thumb.rubric import RUBRIC_ITEMS
    from capeval.thumb.workflow import make_sheets

    d = ctx.folder("odd-annotator")
    files = make_sheets([SYSTEMS_JSON], d / "s", label_studio=True)
    tasks = json.loads(files.label_studio.tasks.read_text(encoding="utf-8"))
    result = [{"from_name": n, "to_name": "caption", "type": "choices",
               "value": {"choices": ["3" if n in ("precision", "recall") else "0"]}} for n in RUBRIC_ITEMS]
    export = [{"id": 100 + k, "data": t["data"],
               "annotations": [{"id": k, "completed_by": {"id": 7, "email": "ann1@example.org"}, "result": result}]}
              for k, t in enumerate(tasks)]
    export[0]["annotations"][0]["completed_by"] = {"id": [1, 2]}
    path = d / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    run_ = ctx.cli("thumb", "collect", "--key", files.key, path, "--out", d / "out", "--bootstrap-samples", "0",
                   timeout=60)
    problems = clean_run(run_, max_lines=6)
    warned = [x for x in lines_of(run_.err) if "not a user id or e-mail" in x]
    if len(warned) != 1:
        problems.append(f"{len(warned)} warning lines on the odd annotator")
    report = d / "out" / "thumb_report.json"
    if not problems:
        missing = json.loads(report.read_text(encoding="utf-8")).get("not_collected", {}).get("annotations")
        if missing != 1:
            problems.append(f"not_collected annotations = {missing}")
    if problems:
        return Outcome(False, "; ".join(problems), run_.report())
    return Outcome(True, f"left out, counted, one warning: {short(warned[0], 60)}")


# ------------------------------------------------------------------------------------------------ processes


from support.processes import cmdline, descendants, gone_within, running  # noqa: E402 (tests/ on sys.path)


def signal_data(ctx: Context) -> Path:
    def build():
        d = ctx.folder("signals")
        data = d / "rows.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in dataset_rows(40_000, seed=3)), encoding="utf-8")
        return data
    return ctx.shared("signal rows", build)


def dataset_signal_probe(how: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        data = signal_data(ctx)
        out = ctx.tmp / "signals" / f"out-{how}"
        args = [data, "--out", out, "--metrics", "bleu", "--processes", "2", "--chunk-size", "400",
                "--no-language-check"]
        command = "$ capeval score-dataset " + shlex.join(map(str, args))
        proc = ctx.popen("score-dataset", *args)
        shards = out / "shards"
        deadline = time.monotonic() + 90
        try:
            while proc.poll() is None and time.monotonic() < deadline and not (
                    shards.is_dir() and any(shards.glob("part-*.parquet"))):
                time.sleep(0.05)
            if proc.poll() is not None:
                o, e = proc.communicate()
                return Outcome(False, f"finished (exit {proc.returncode}) before the signal", f"{command}\n{e}")
            family = [p for p in descendants(proc.pid) if running(p)]
            workers = [p for p in family if b"spawn_main" in cmdline(p)]
            sig = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}[how]
            if how == "SIGINT":
                os.killpg(proc.pid, sig)  # Ctrl-C at a terminal: the whole process group
            else:
                os.kill(proc.pid, sig)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        left = gone_within(family, 5)
        detail = f"{command}\n[{how}; exit {proc.returncode}; {len(workers)} workers]\nstderr:\n{err.rstrip()}"
        problems = []
        if len(workers) != 2:
            problems.append(f"{len(workers)} workers seen")
        if left:
            problems.append(f"{len(left)} process(es) left running")
        if how == "SIGKILL":
            if problems:
                return Outcome(False, "; ".join(problems), detail)
            return Outcome(True, f"parent killed; its {len(workers)} workers gone within 5 s")
        want = {"SIGINT": (130, "interrupted"), "SIGTERM": (143, "terminated")}[how]
        if proc.returncode != want[0]:
            problems.append(f"exit {proc.returncode}")
        if "Traceback" in err:
            problems.append("a traceback")
        if len(lines_of(err)) > 2 or not lines_of(err) or lines_of(err)[-1] != f"capeval score-dataset: {want[1]}":
            problems.append(f"stderr: {short(err, 60)!r}")
        if problems:
            return Outcome(False, "; ".join(problems), detail)
        return Outcome(True, f"exit {proc.returncode}: {lines_of(err)[-1]}; workers gone")
    return run


def score_signal_probe(how: str) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        def build():
            d = ctx.folder("score-signals")
            rng = random.Random(3)

            def caption():
                return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12)))
            preds, refs = d / "p.jsonl", d / "r.jsonl"
            preds.write_text("".join(json.dumps({"image_id": i, "caption": caption()}) + "\n" for i in range(20_000)))
            refs.write_text("".join(json.dumps({"image_id": i, "references": [caption(), caption()]}) + "\n"
                                    for i in range(20_000)))
            return preds, refs
        preds, refs = ctx.shared("score signal files", build)
        args = ["score", "--predictions", preds, "--references", refs, "--metrics", "meteor", "--processes", "2",
                "--no-language-check"]
        command = "$ capeval " + shlex.join(map(str, args))
        proc = ctx.popen(*args)
        deadline = time.monotonic() + 90
        err = ""
        try:
            workers: list[int] = []
            while proc.poll() is None and time.monotonic() < deadline:
                workers = [p for p in descendants(proc.pid) if running(p) and b"capeval" in cmdline(p)
                           and b"capeval.cli.launcher" not in cmdline(p)]
                if len(workers) >= 2:
                    break
                time.sleep(0.2)
            time.sleep(3)  # the workers are importing or scoring
            if proc.poll() is not None:
                _, e = proc.communicate()
                return Outcome(False, f"finished (exit {proc.returncode}) before the signal", f"{command}\n{e}")
            family = [p for p in descendants(proc.pid) if running(p)]
            if how == "SIGINT":
                os.killpg(proc.pid, signal.SIGINT)
            else:
                os.kill(proc.pid, signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        left = gone_within(family, 30 if how == "SIGKILL" else 10)
        detail = f"{command}\n[{how}; exit {proc.returncode}; {len(workers)} workers]\nstderr:\n{err.rstrip()}"
        problems = []
        if len(workers) < 2:
            problems.append(f"{len(workers)} workers seen")
        if left:
            problems.append(f"{len(left)} process(es) left running")
            for p in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
        if how == "SIGKILL":
            if problems:
                return Outcome(False, "; ".join(problems), detail)
            return Outcome(True, f"parent killed; launcher and {len(workers)} workers gone")
        want = {"SIGINT": (130, "interrupted"), "SIGTERM": (143, "terminated")}[how]
        if proc.returncode != want[0]:
            problems.append(f"exit {proc.returncode}")
        if "Traceback" in err:
            problems.append("a traceback")
        if len(lines_of(err)) > 2 or not lines_of(err) or lines_of(err)[-1] != f"capeval score: {want[1]}":
            # (the line before, if any: a worker's announcement of one-time work, e.g. METEOR's table built cold)
            problems.append(f"stderr: {short(err, 60)!r}")
        if problems:
            return Outcome(False, "; ".join(problems), detail)
        return Outcome(True, f"exit {proc.returncode}: {lines_of(err)[-1]}; no process left")
    return run


# ------------------------------------------------------------------------------------------------ scale


def scale_probe(ctx: Context) -> Outcome:
    import capeval

    d = ctx.folder("scale")
    n = 200_000
    rng = random.Random(7)

    def caption() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
    preds = [{"image_id": i, "caption": caption()} for i in range(n)]
    refs = {str(i): [caption() for _ in range(rng.randint(1, 3))] for i in range(n)}
    (d / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds), encoding="utf-8")
    (d / "refs.json").write_text(json.dumps(refs), encoding="utf-8")
    run_ = ctx.cli("score", "--predictions", d / "preds.jsonl", "--references", d / "refs.json", "--metrics",
                   "bleu,rouge_l,cider_d", "--json", d / "out.json", "--no-language-check", timeout=420)
    problems = clean_run(run_, max_lines=4)
    if problems:
        return Outcome(False, "; ".join(problems), run_.report())
    if "scoring in chunks" not in run_.err:
        problems.append("not routed through chunks")
    out = json.loads((d / "out.json").read_text(encoding="utf-8"))
    per = out.get("per_caption", {})
    if any(len(per.get(k, [])) != n for k in ("bleu_4", "rouge_l", "cider_d")):
        problems.append("per-caption lists not 200,000 long")
    # the clean run: per-caption BLEU-4 and ROUGE-L (corpus-independent) of a sample, in memory
    sample = random.Random(1).sample(range(n), 1000)
    clean = capeval.score([preds[i]["caption"] for i in sample], [refs[str(i)] for i in sample],
                          metrics=["bleu", "rouge_l"], language_check=False)
    for key in ("rouge_l",):
        if per.get(key) and any(abs(per[key][i] - clean["per_caption"][key][k]) > 1e-12 for k, i in enumerate(sample)):
            problems.append(f"{key} per caption differs from the in-memory run")
    if per.get("rouge_l") and abs(sum(per["rouge_l"]) / n - out["rouge_l"]) > 1e-9:
        problems.append("rouge_l is not the mean of its per-caption scores")
    if not all(math.isfinite(out.get(k, float("nan"))) for k in ("bleu_4", "rouge_l", "cider_d")):
        problems.append("a corpus score missing")
    if problems:
        return Outcome(False, "; ".join(problems), run_.report())
    return Outcome(True, f"in chunks, {run_.seconds:.0f} s; bleu_4 {out['bleu_4']:.4f} rouge_l {out['rouge_l']:.4f} "
                         f"cider_d {out['cider_d']:.4f}; sample = in memory")


# ------------------------------------------------------------------------------------------------ the probe set


def all_probes() -> list[Probe]:
    probes: list[Probe] = []

    def add(prefix: str, door: str, case: str, expected: str, run, slow: bool = False) -> None:
        number = sum(1 for p in probes if p.id.startswith(prefix)) + 1
        probes.append(Probe(f"{prefix}{number:02d}", door, case, expected, run, slow))

    for door, prefix, maker in (("api", "IA", image_api_probe), ("cli", "IC", image_cli_probe),
                                ("dataset", "ID", image_dataset_probe), ("module", "IM", image_module_probe),
                                ("space", "IS", image_space_probe)):
        for name in IMAGE_CASES:
            scores = name.startswith("strip")
            expected = ("= 224² square" if door == "api" else "= API") if scores else \
                ("row skipped, named" if door == "dataset" else "refused, 1 line")
            add(prefix, f"img-{door}", name, expected, maker(name))
    for name in TEXT_CASES:
        add("PP", "preds-cli", name, "refused, 1 line", text_cli_probe(name, "predictions"))
    for name in TEXT_CASES:
        if name != "COCO image id twice":
            add("PR", "refs-cli", name, "refused, 1 line", text_cli_probe(name, "references"))
    for name in TEXT_CASES:
        add("PL", "preds-io", name, "refused, 1 line", text_loader_probe(name))
    for name in PUSH_CASES:
        add("TP", "thumb-push", name, "nothing sent", thumb_push_probe(name))
    add("LS", "labelstudio", "307 to other port, legacy", "no Authorization", ls_redirect_probe("legacy"))
    add("LS", "labelstudio", "307 to other port, personal", "no Authorization", ls_redirect_probe("personal"))
    add("LS", "labelstudio", "echo body+reason, legacy", "token not shown", ls_echo_probe("legacy", "2"))
    add("LS", "labelstudio", "echo body+reason, personal", "token not shown", ls_echo_probe("personal", "2"))
    add("LS", "labelstudio", "echo plain body, personal", "token not shown", ls_echo_probe("personal", "1"))
    add("LS", "labelstudio", "user:password@ URL, status", "password not shown", ls_userinfo_probe("status"))
    add("LS", "labelstudio", "user:password@ URL, push", "password not shown", ls_userinfo_probe("push"))
    add("CA", "cache", "4 KB garbage: SPICE parses", "same, ≤1 warning", cache_damage_probe("spice",
                                                                                            "spice/parses.sqlite"))
    add("CA", "cache", "4 KB garbage: LCEval feats", "same, ≤1 warning",
        cache_damage_probe("lceval_released", "lceval/features.sqlite"))
    add("CA", "cache", "read-only cache (simulated)", "same, 1 warning", cache_read_only_probe)
    add("CA", "cache", "leftovers: cache clear", "listed, removed", cache_leftovers_probe)
    add("CA", "cache", "leftovers: swept on open", "swept", cache_sweep_probe)
    add("CA", "cache", "score-dataset cider-df.bin", "same, ≤1 warning", cider_df_probe)
    add("DA", "data", "on-error skip, 1 bad image", "listed by id", skip_unreadable_probe)
    add("DA", "data", "=HYPERLINK( caption, sheet", "neutral, same back", formula_probe)
    add("DA", "data", "comment >131,072 chars", "collected", long_comment_probe)
    add("DA", "data", 'completed_by {"id": [1, 2]}', "left out, 1 warn", odd_annotator_probe)
    add("PS", "processes", "SIGINT group, dataset -p2", "130, 1 line", dataset_signal_probe("SIGINT"))
    add("PS", "processes", "SIGTERM, score-dataset -p2", "143, 1 line", dataset_signal_probe("SIGTERM"))
    add("PS", "processes", "SIGKILL parent, dataset -p2", "workers gone ≤5 s", dataset_signal_probe("SIGKILL"))
    add("PS", "processes", "SIGINT group, score -p2", "130, 1 line", score_signal_probe("SIGINT"))
    add("PS", "processes", "SIGTERM, score -p2", "143, 1 line", score_signal_probe("SIGTERM"))
    add("PS", "processes", "SIGKILL parent, score -p2", "all gone", score_signal_probe("SIGKILL"))
    add("SC", "scale", "200k captions, 3 metrics", "scored in chunks", scale_probe, slow=True)
    return probes


# ------------------------------------------------------------------------------------------------ table


COLUMNS = [("id", 4), ("door", 11), ("case", 27), ("expected", 18), ("outcome", 31), ("ok", 4)]


def cell(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"


def row(values: list[str]) -> str:
    return " ".join(cell(v, w) for v, (_, w) in zip(values, COLUMNS)).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", metavar="SUBSTRING", help="run the probes whose id, door or case contains it")
    parser.add_argument("--list", action="store_true", help="list the probes and exit")
    parser.add_argument("--quick", action="store_true", help="skip the slow probe (200,000 captions)")
    parser.add_argument("--json", metavar="PATH", help="write the outcomes as JSON")
    parser.add_argument("--mem-cap-gib", type=float, default=MEM_CAP / GIB,
                        help="address-space cap (RLIMIT_AS) of every probe, in GiB (default 8)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args(argv)

    probes = all_probes()
    if args.only:
        needle = args.only.lower()
        probes = [p for p in probes if needle in f"{p.id} {p.door} {p.case}".lower()]
    if args.quick:
        probes = [p for p in probes if not p.slow]
    if args.list:
        print(row([name for name, _ in COLUMNS[:4]]))
        for p in probes:
            print(row([p.id, p.door, p.case + (" (slow)" if p.slow else ""), p.expected]))
        print(f"{len(probes)} probe(s)")
        return 0

    cap = int(args.mem_cap_gib * GIB)
    tmp = Path(tempfile.mkdtemp(prefix="capeval-hostile-"))
    ctx = Context(tmp, cap)
    os.environ.update({k: ctx.env[k] for k in ("CAPEVAL_CACHE_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
                                               "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE")})
    os.environ.pop("CAPEVAL_MAX_INPUT_BYTES", None)
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))  # the in-process doors
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    started = time.monotonic()
    print(f"capeval hostile-input probes: {len(probes)} probe(s), memory cap {args.mem_cap_gib:g} GiB\n"
          f"temporary folder {tmp}", flush=True)
    print(row([name for name, _ in COLUMNS]))
    print(row(["-" * w for _, w in COLUMNS]), flush=True)
    results = []
    try:
        for p in probes:
            t0 = time.monotonic()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = p.run(ctx)
            except BaseException as err:  # noqa: BLE001 - the probe itself broke: a failure, with its traceback
                if isinstance(err, KeyboardInterrupt):
                    raise
                out = Outcome(False, f"probe raised {type(err).__name__}: {short(err, 60)}", traceback.format_exc())
            out.outcome = out.outcome.replace(str(tmp) + "/", "")  # the temporary folder, left out of the table
            seconds = time.monotonic() - t0
            results.append({"id": p.id, "door": p.door, "case": p.case, "expected": p.expected,
                            "outcome": out.outcome, "passed": out.passed, "seconds": round(seconds, 2),
                            "detail": out.detail})
            print(row([p.id, p.door, p.case, p.expected, out.outcome, "pass" if out.passed else "FAIL"]), flush=True)
    finally:
        elapsed = time.monotonic() - started
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    failed = [r for r in results if not r["passed"]]
    doors: dict[str, list[int]] = {}
    for r in results:
        doors.setdefault(r["door"], [0, 0])[0 if r["passed"] else 1] += 1
    print()
    print(textwrap.fill("passed by door: " + ", ".join(f"{d} {v[0]}/{sum(v)}" for d, v in doors.items()), WIDTH))
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed, {len(results)} probes, {elapsed:.0f} s")
    for r in failed:
        print(f"\nFAIL {r['id']} {r['door']} / {r['case']}: {r['outcome']}\n{r['detail'].rstrip()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"probes": results, "passed": len(results) - len(failed),
                                               "failed": len(failed), "seconds": round(elapsed, 1),
                                               "memory_cap_bytes": cap, "python": sys.version.split()[0]},
                                              indent=2) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
