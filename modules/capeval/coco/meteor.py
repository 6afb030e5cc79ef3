"""METEOR 1.5 (Denkowski & Lavie 2014), pycocoevalcap's ``-l en -norm`` configuration, two backends.

* ``meteor_backend="python"`` (default): :class:`capeval.meteor.scorer.PythonMeteorScorer`, the jar's
  algorithm in Python (normaliser, exact / Snowball stem / WordNet synonym / paraphrase matchers, beam
  search, English parameters) reading the jar's language data; no Java, no JVM start-up. Parity with
  the jar is tested and measured (BENCHMARKS.md, "METEOR without Java").
* ``meteor_backend="java"``: :class:`capeval.meteor.jar.MeteorScorer`, the jar itself through persistent
  JVMs (needs Java); for verification.

Both give the jar's statistics lines, segment scores and corpus score (the jar's aggregate over all
segments' statistics, not the mean of the segment scores). Scores are in [0, 1].
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from capeval.batch import CaptionBatch
from capeval.meteor.jar import MeteorError, MeteorScorer, sanitize, score_line
from capeval.meteor.scorer import PythonMeteorScorer
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option, OptionValueError
from capeval.paths import meteor_jar

__all__ = ["BACKENDS", "Meteor", "MeteorError", "MeteorScorer", "PythonMeteorScorer", "sanitize", "score_line"]

#: ``meteor_backend`` values.
BACKENDS = ("python", "java")

_SHARED_PYTHON: PythonMeteorScorer | None = None


def python_scorer() -> PythonMeteorScorer:
    """The process-wide pure-Python scorer (its language data and caches are loaded once)."""
    global _SHARED_PYTHON
    if _SHARED_PYTHON is None:
        _SHARED_PYTHON = PythonMeteorScorer()
    return _SHARED_PYTHON


class Meteor(CaptionMetric):
    """METEOR 1.5 (``-l en -norm``) as in pycocoevalcap.

    Options: ``meteor_backend`` (``"python"``, default, or ``"java"``: the jar, for verification);
    ``meteor_jvms`` (parallel JVMs, java backend only, default 1), ``meteor_timeout`` (seconds per JVM
    answer, default 60). None of them changes the scores.
    """

    pauses_gc: ClassVar[bool] = True

    name: ClassVar[str] = "meteor"
    code_packages = ("capeval.meteor",)  # METEOR 1.5's port
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    limits_length: ClassVar[bool] = True
    options: ClassVar[dict] = {
        "meteor_backend": Option(
            default="python", kind="str", choices=BACKENDS,
            help="METEOR 1.5 in Python (python, the default: no Java) or through the original jar (java: needs Java 8 "
                 "or newer; for verification); the scores are the same with both: the Python port gives the jar's "
                 "statistics lines and scores (identical on all 20,000 Karpathy-test candidates)"),
        "meteor_jvms": Option(
            default=1, kind="int", minimum=1,
            help="parallel METEOR JVMs (2 GB heap each) with meteor_backend java (default 1; the scores do not "
                 "depend on it)"),
        "meteor_timeout": Option(
            default=60.0, kind="float",
            help="seconds (more than 0) to wait for any METEOR answer before restarting the JVM, with meteor_backend "
                 "java (default 60)"),
    }

    def __init__(self, **options) -> None:
        super().__init__(**options)
        timeout = self.config["meteor_timeout"]
        if not timeout > 0:  # strictly positive: not a minimum an Option states
            raise OptionValueError("meteor_timeout", timeout, "a number of seconds > 0")
        if self.config["meteor_backend"] == "java":
            self.scorer = MeteorScorer(jvms=self.config["meteor_jvms"], timeout=timeout)
        else:
            self.scorer = python_scorer()

    @classmethod
    def check_available(cls, backend: str = "python") -> None:
        """Raise the error a user would meet: the jar's files missing, or (java backend) no Java."""
        if backend == "java":
            from capeval.java import java_executable

            java_executable("METEOR 1.5 (meteor_backend='java')")
        if not meteor_jar().is_file():
            raise FileNotFoundError(f"METEOR 1.5's jar (its language data) not found at {meteor_jar()}; "
                                    "reinstall pycocoevalcap==1.2.")
        if backend == "python":
            from capeval.meteor.scorer import snowball_english

            snowball_english()

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        prepared = self._prepared
        if prepared is None:
            prepared = self.prepare(batch)
        elif len(prepared) != len(batch):
            raise ValueError(f"meteor: {len(prepared)} prepared statistics for a batch of {len(batch)}.")
        corpus, per_caption = self.scorer.evaluate(prepared)
        return MetricOutput(corpus={"meteor": corpus}, per_caption={"meteor": per_caption}, signature="1.5-en-norm",
                            state=list(prepared))

    @classmethod
    def merge_state(cls, merged: list[float] | None, state: list[str]) -> list[float]:
        """The jar's running aggregate (23 sums, in segment order: the same float sums as one call) with the next
        batch's statistics lines added."""
        from capeval.meteor.stats import aggregate_lines

        return aggregate_lines(state, start=merged)

    @classmethod
    def corpus_from_merged(cls, merged: list[float]) -> dict[str, float]:
        from capeval.meteor.stats import score

        return {"meteor": float(score(merged))}

    def prepare(self, batch: CaptionBatch) -> list[str]:
        """The jar's statistics line per item (the heavy part); :meth:`compute` evaluates them all at once."""
        from capeval.progress import progress

        hypotheses = [" ".join(t) for t in batch.prediction_tokens]
        references = [[" ".join(t) for t in refs] for refs in batch.reference_tokens]
        if isinstance(self.scorer, PythonMeteorScorer):  # its one-time set-up before the bar, not in the first item
            self.scorer.load(progress=batch.progress)
        with progress(None, total=len(hypotheses), desc="METEOR", enabled=batch.progress) as bar:
            return self.scorer.statistics(hypotheses, references, progress=bar)

    def close(self) -> None:
        if self.scorer is not _SHARED_PYTHON:
            self.scorer.close()

