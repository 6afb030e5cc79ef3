"""The ``java`` METEOR backend: METEOR 1.5 (Denkowski & Lavie 2014) through pycocoevalcap's ``meteor-1.5.jar``, without its hangs.

Kept for verification (the parity tests run it beside :mod:`capeval.meteor.scorer`) and selected with
``meteor_backend="java"``; it needs a Java runtime.

Same program and arguments as pycocoevalcap (``java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en -norm``),
same protocol (one ``SCORE ||| ref 1 ||| ... ||| ref n ||| hypothesis`` line per caption, answered by
a line of sufficient statistics; then one ``EVAL ||| stats 1 ||| ... ||| stats N`` line answered by
the N segment scores and the corpus score), so the numbers are pycocoevalcap's. The corpus score is
the jar's aggregate over all segments' statistics (not the mean of the segment scores).

What is different:

* **Sanitised input.** Every control character (including every character Java or the jar could
  take as a line break: ``\\n \\r \\v \\f \\x1c-\\x1f \\x85 \\u2028 \\u2029``) becomes a space and
  ``|||`` is removed from references as well as hypotheses, so a caption can never split a request
  line or add a field: the cause of pycocoevalcap's infinite hang.
* **Deadlines.** Requests are written and answers read by one ``selectors`` loop (POSIX pipes), and
  every wait has a deadline (``meteor_timeout`` seconds without an answer; 180 s for a JVM's first
  answer, which includes loading its paraphrase table). On a timeout, or if the JVM dies, it is
  killed and restarted and the unanswered requests are sent again (twice at most, then
  :class:`MeteorError`, a ``RuntimeError`` naming the caption).
* **Pipelining.** All SCORE lines are written while answers are read, instead of one round trip per
  caption; identical SCORE requests (and identical statistics in EVAL) are sent once.
* **Parallel JVMs.** ``meteor_jvms=N`` splits the requests over N JVMs. The corpus score is still
  exactly the jar's aggregate: with one JVM it comes from pycocoevalcap's single EVAL line; otherwise
  from an EVAL of the statistics summed exactly as the jar sums them (see :meth:`MeteorScorer.evaluate`).
* **Clean shutdown.** JVMs are killed on :meth:`MeteorScorer.close`, on leaving a ``with`` block, when
  the scorer is garbage-collected, and at interpreter exit.

Scores are in [0, 1].
"""
from __future__ import annotations

import atexit
import collections
import os
import re
import subprocess
import selectors
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from capeval.java import java_executable
from capeval.paths import meteor_jar

__all__ = ["MeteorError", "MeteorScorer", "check_options", "sanitize", "score_line"]

#: Control characters (Unicode category Cc) plus the line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SPACE_RUNS = re.compile(" {2,}")

#: Seconds a JVM may take to start and answer its first request (it loads a 60 MB paraphrase table).
STARTUP_TIMEOUT = 180.0
#: Restarts allowed per call before giving up.
MAX_RESTARTS = 2


class MeteorError(RuntimeError):
    """The METEOR jar failed, answered something unexpected, or did not answer in time."""


def sanitize(text: str) -> str:
    """Make ``text`` safe for one field of a METEOR stdio request line.

    Control and line-separator characters become spaces, ``|||`` is removed (as pycocoevalcap does
    for hypotheses), runs of spaces become one. Plain tokenised captions are returned unchanged.
    """
    text = _UNSAFE.sub(" ", text)
    if "|||" in text:
        text = text.replace("|||", "")  # a run of k pipes keeps k mod 3: no '|||' can remain
    if "  " in text:
        text = _SPACE_RUNS.sub(" ", text)
    return text


def score_line(hypothesis: str, references: Sequence[str]) -> str:
    """The SCORE request for one caption, formatted exactly as pycocoevalcap formats it."""
    return " ||| ".join(("SCORE", " ||| ".join(sanitize(r) for r in references), sanitize(hypothesis)))


def check_options(jvms: int, timeout: float) -> None:
    """``ValueError`` naming the option unless ``jvms`` is a positive int and ``timeout`` a positive number."""
    if not isinstance(jvms, int) or isinstance(jvms, bool) or jvms < 1:
        raise ValueError(f"meteor_jvms must be a positive integer, got {jvms!r}.")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"meteor_timeout must be a positive number of seconds, got {timeout!r}.")


class _Timeout(Exception):
    pass


class _Died(Exception):
    pass


class _JVM:
    """One METEOR process, driven by a ``selectors`` loop: requests are written while answers are read
    (pipelined, so neither side can fill a pipe and block the other), and every wait has a deadline."""

    def __init__(self, command: list[str], cwd: str) -> None:
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
        )
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self.fresh = True  # has not answered anything yet (the first answer includes the start-up)
        self._pending = b""  # partial answer line
        self._stderr_open = True

    def exchange(self, requests: Sequence[str], answers_expected: int, timeout: float, first_timeout: float, on_line=None) -> list[str]:
        """Write ``requests`` and collect ``answers_expected`` answer lines.

        Raises ``_Timeout`` when no answer line arrives for ``timeout`` seconds (``first_timeout`` for the
        JVM's very first answer) and ``_Died`` when the JVM exits; the answers received so far are in
        the exception's ``args[0]``.
        """
        proc = self.process
        fd_in, fd_out, fd_err = proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()
        os.set_blocking(fd_in, False)
        payload = memoryview("".join(r + "\n" for r in requests).encode("utf-8", "replace"))
        sent = 0
        answers: list[str] = []
        deadline = time.monotonic() + (first_timeout if self.fresh else timeout)
        with selectors.DefaultSelector() as selector:  # epoll/kqueue: no FD_SETSIZE limit, unlike select()
            selector.register(fd_out, selectors.EVENT_READ)
            self._refuse_unsolicited(selector, fd_out)
            if self._stderr_open:
                selector.register(fd_err, selectors.EVENT_READ)
            if payload:
                selector.register(fd_in, selectors.EVENT_WRITE)
            while len(answers) < answers_expected:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    raise _Timeout(answers)
                ready = {key.fd for key, _ in selector.select(wait)}
                if fd_in in ready:
                    try:
                        sent += os.write(fd_in, payload[sent : sent + 65536])
                    except BlockingIOError:
                        pass
                    except OSError:  # BrokenPipeError: the JVM is gone
                        raise _Died(answers) from None
                    if sent >= len(payload):
                        selector.unregister(fd_in)
                if fd_err in ready:
                    chunk = os.read(fd_err, 65536)
                    if chunk:
                        self.stderr_tail.extend(chunk.decode("utf-8", "replace").splitlines())
                    else:
                        self._stderr_open = False
                        selector.unregister(fd_err)
                if fd_out in ready:
                    chunk = os.read(fd_out, 1 << 20)
                    if not chunk:
                        raise _Died(answers)
                    *complete, self._pending = (self._pending + chunk).split(b"\n")
                    if complete:
                        self.fresh = False
                        deadline = time.monotonic() + timeout
                        answers.extend(line.decode("utf-8", "replace").rstrip("\r") for line in complete)
                        if on_line is not None:
                            on_line(len(complete))
        if len(answers) > answers_expected:
            raise MeteorError(
                f"METEOR 1.5 sent {len(answers)} answers to {answers_expected} requests "
                f"(first extra: {answers[answers_expected][:200]!r}); the stdio protocol lost synchronisation."
            )
        return answers

    def _refuse_unsolicited(self, selector, fd_out: int) -> None:
        """Before a request: an answer line nobody asked for (it arrived after the last exchange ended) means the
        stdio protocol lost synchronisation; refuse rather than take it for the next request's answer."""
        if self._pending.strip() or any(key.fd == fd_out for key, _ in selector.select(0)):
            chunk = b"" if self._pending.strip() else os.read(fd_out, 1 << 20)
            extra = (self._pending + chunk).decode("utf-8", "replace").strip()
            if extra:
                raise MeteorError(f"METEOR 1.5 sent an answer nobody asked for ({extra[:200]!r}); the stdio "
                                  "protocol lost synchronisation.")

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        proc = self.process
        if proc.poll() is None:
            try:
                proc.stdin.close()
            except OSError:
                pass
            proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - kill() does not fail on Linux
            pass
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


_LIVE_SCORERS: "weakref.WeakSet[MeteorScorer]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for scorer in list(_LIVE_SCORERS):
        scorer.close()


def _kill_all(jvms: list[_JVM]) -> None:
    for jvm in jvms:
        jvm.kill()
    jvms.clear()


class MeteorScorer:
    """Persistent METEOR 1.5 JVM(s) scoring (hypothesis, references) pairs; see the module docstring.

    Args:
        jvms: number of JVMs (each takes up to 2 GB of heap); SCORE requests are split among them.
        timeout: seconds to wait for any one answer before the JVM is restarted.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, jvms: int = 1, timeout: float = 60.0) -> None:
        check_options(jvms, timeout)
        jar = meteor_jar()
        if not jar.is_file():
            raise FileNotFoundError(f"METEOR 1.5 jar not found at {jar}; reinstall pycocoevalcap==1.2.")
        self.command = [java_executable("METEOR 1.5 (meteor_backend='java'; the default 'python' backend needs no Java)"), "-jar", "-Xmx2G", str(jar), "-", "-", "-stdio", "-l", "en", "-norm"]
        self.cwd = str(jar.parent)
        self.n_jvms = jvms
        self.timeout = float(timeout)
        self.restarts = 0
        self._jvms: list[_JVM] = []
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _kill_all, self._jvms)
        _LIVE_SCORERS.add(self)

    # -- lifecycle -------------------------------------------------------------------------------
    def _jvm(self, index: int) -> _JVM:
        while len(self._jvms) <= index:
            self._jvms.append(_JVM(self.command, self.cwd))
        if not self._jvms[index].alive():
            self._jvms[index].kill()
            self._jvms[index] = _JVM(self.command, self.cwd)
        return self._jvms[index]

    def _restart(self, index: int) -> _JVM:
        self._jvms[index].kill()
        self._jvms[index] = _JVM(self.command, self.cwd)
        self.restarts += 1
        return self._jvms[index]

    def close(self) -> None:
        """Kill the JVMs (safe to call twice; a later call to :meth:`score` starts new ones)."""
        _kill_all(self._jvms)

    def __enter__(self) -> MeteorScorer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- protocol --------------------------------------------------------------------------------
    def _exchange(self, index: int, requests: Sequence[str], what: Sequence[str], on_answer=None) -> list[str]:
        """Send ``requests`` to JVM ``index`` (pipelined) and return one answer line per request.

        ``what[i]`` describes request i for error messages. Restarts the JVM on a timeout or death and
        sends the unanswered requests again.
        """
        answers: list[str] = []
        restarts = 0
        while len(answers) < len(requests):
            jvm = self._jvm(index)
            pending = requests[len(answers) :]
            try:
                answers += jvm.exchange(pending, len(pending), self.timeout, max(self.timeout, STARTUP_TIMEOUT), on_answer)
            except MeteorError:
                jvm.kill()
                raise
            except (_Timeout, _Died) as err:
                answers += err.args[0]
                failed = what[len(answers)]
                reason = f"did not answer within {self.timeout:g} s" if isinstance(err, _Timeout) else "exited"
                stderr = " | ".join(jvm.stderr_tail)
                if restarts >= MAX_RESTARTS:
                    jvm.kill()
                    raise MeteorError(
                        f"METEOR 1.5 {reason} on {failed} after {restarts} restart(s)"
                        + (f"; stderr: {stderr[-500:]}" if stderr else "")
                        + ". Raise meteor_timeout if the machine is very busy."
                    ) from None
                restarts += 1
                self._restart(index)
        return answers

    def statistics(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], progress=None) -> list[str]:
        """METEOR sufficient statistics (one line of numbers) per (hypothesis, references) pair."""
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists.")
        for i, refs in enumerate(references):
            if len(refs) == 0:
                raise ValueError(f"references[{i}] is empty; METEOR needs at least one reference.")
        all_requests = [score_line(h, r) for h, r in zip(hypotheses, references)]
        # identical requests get identical statistics from the jar: ask once
        first_index: dict[str, int] = {}
        for i, line in enumerate(all_requests):
            first_index.setdefault(line, i)
        requests = list(first_index)
        labels = [f"caption {i} ({hypotheses[i][:60]!r})" for i in first_index.values()]
        n_jvms = max(1, min(self.n_jvms, len(requests)))
        bounds = [round(k * len(requests) / n_jvms) for k in range(n_jvms + 1)]
        with self._lock:
            for k in range(n_jvms):
                self._jvm(k)  # start them all at once: start-up dominates small calls
            tick = progress.update if progress is not None else None
            tick_lock = threading.Lock()
            if tick is not None and len(requests) < len(all_requests):
                tick(len(all_requests) - len(requests))

            def on_answer(count: int) -> None:
                if tick is not None:
                    with tick_lock:
                        tick(count)

            def run(k: int) -> list[str]:
                lo, hi = bounds[k], bounds[k + 1]
                return self._exchange(k, requests[lo:hi], labels[lo:hi], on_answer)

            if n_jvms == 1:
                parts = [run(0)]
            else:
                with ThreadPoolExecutor(n_jvms) as pool:
                    parts = list(pool.map(run, range(n_jvms)))
        unique_stats = [line for part in parts for line in part]
        for label, line in zip(labels, unique_stats):
            fields = line.split()
            if len(fields) < 4 or not all(_is_number(f) for f in fields):
                raise MeteorError(f"METEOR 1.5 answered {line[:200]!r} for {label}; expected statistics.")
        by_request = dict(zip(requests, unique_stats))
        return [by_request[line] for line in all_requests]

    def _eval_on(self, index: int, statistics: Sequence[str]) -> list[float]:
        """One ``EVAL`` line on JVM ``index``: the segment scores, then the aggregate (n + 1 floats)."""
        request = "EVAL ||| " + " ||| ".join(statistics)
        expected = len(statistics) + 1
        for attempt in range(MAX_RESTARTS + 1):
            jvm = self._jvm(index)
            try:
                lines = jvm.exchange([request], expected, self.timeout, max(self.timeout, STARTUP_TIMEOUT))
                break
            except MeteorError:
                jvm.kill()
                raise
            except (_Timeout, _Died) as err:
                reason = f"did not answer within {self.timeout:g} s" if isinstance(err, _Timeout) else "exited"
                if attempt == MAX_RESTARTS:
                    jvm.kill()
                    raise MeteorError(
                        f"METEOR 1.5 {reason} on the EVAL request (answer {len(err.args[0]) + 1} of "
                        f"{expected}) after {attempt} restart(s). Raise meteor_timeout if the machine is busy."
                    ) from None
                self._restart(index)
        try:
            return [float(x) for x in lines]
        except ValueError:
            bad = next(x for x in lines if not _is_number(x))
            if len(bad.split()) > 1 and all(_is_number(f) for f in bad.split()):
                raise MeteorError(f"METEOR 1.5 answered the EVAL request with statistics {bad[:200]!r} (a late "
                                  "answer to a SCORE request): the stdio protocol lost synchronisation.") from None
            raise MeteorError(f"METEOR 1.5 answered the EVAL request with {bad[:200]!r}.") from None

    def evaluate(self, statistics: Sequence[str]) -> tuple[float, list[float]]:
        """The jar's ``EVAL`` of the statistics: ``(corpus score, segment scores)``.

        With one JVM and no repeated statistics: one ``EVAL`` line with every segment's statistics,
        answered by the segment scores and the corpus score (exactly pycocoevalcap's request).
        Otherwise the segment scores of the distinct statistics lines come from ``EVAL`` lines split
        over the JVMs (a segment's score depends on its statistics only), and the corpus score from one
        ``EVAL`` of the statistics summed as ``MeteorStats.addStats`` sums them (same fields, same order
        of double additions, same perfect-match rule for chunks; see :func:`_sum_statistics`), so both
        are the numbers of the single request.
        """
        if not statistics:
            raise ValueError("No statistics to evaluate.")
        unique = list(dict.fromkeys(statistics))  # a segment's score depends on its statistics only
        n_jvms = max(1, min(self.n_jvms, len(unique)))
        summed = _sum_statistics(statistics) if (n_jvms > 1 or len(unique) < len(statistics)) else None
        with self._lock:
            if summed is None:  # pycocoevalcap's request: every segment in one EVAL line
                values = self._eval_on(0, statistics)
                return values[-1], values[:-1]
            bounds = [round(k * len(unique) / n_jvms) for k in range(n_jvms + 1)]

            def segment_scores(k: int) -> list[float]:
                return self._eval_on(k, unique[bounds[k] : bounds[k + 1]])[:-1]

            if n_jvms == 1:
                parts = [segment_scores(0)]
            else:
                with ThreadPoolExecutor(n_jvms) as pool:
                    parts = list(pool.map(segment_scores, range(n_jvms)))
            corpus = self._eval_on(0, [summed])[-1]
        score_of = dict(zip(unique, (v for part in parts for v in part)))
        return corpus, [score_of[line] for line in statistics]

    def score(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], progress=None
    ) -> tuple[float, list[float]]:
        """``(corpus METEOR, per-caption METEOR)`` exactly as pycocoevalcap's ``Meteor.compute_score``."""
        return self.evaluate(self.statistics(hypotheses, references, progress))


def _sum_statistics(statistics: Sequence[str]) -> str | None:
    """The statistics line of the jar's corpus aggregate, or ``None`` if the lines are not 23 fields.

    ``MeteorStats.addStats`` as :func:`capeval.meteor.stats.aggregate` mirrors it (fields added in segment
    order as Java adds doubles; a perfect segment adds no chunks), formatted as the jar formats statistics.
    """
    from capeval.meteor.stats import STAT_FIELDS, aggregate, format_stats

    rows = [line.split() for line in statistics]
    if any(len(r) != STAT_FIELDS for r in rows):
        return None
    return format_stats(aggregate([[float(x) for x in r] for r in rows]))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
