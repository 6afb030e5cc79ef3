"""The original Java PTB tokenizer (CoreNLP 3.4.1 jar shipped with pycocoevalcap), made safe.

Same command as pycocoevalcap (``PTBTokenizer -preserveLines -lowerCase``) and the same punctuation
removal, but: input goes through stdin (no temp file inside site-packages); every character that
Java treats as a line break (``\\n \\r \\v \\f \\x85 \\u2028 \\u2029``) is replaced by a space first, so
one caption can never shift the alignment of the others; the output line count is checked; a
non-``str`` item raises ``ValueError`` naming its index; lone surrogates are passed through as
malformed UTF-8 (Java reads U+FFFD, which the lexer deletes, as the pure-Python tokenizer does);
and the process has a timeout.
"""
from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

from capeval.java import java_executable
from capeval.paths import corenlp_ptb_jar

_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x85\u2028\u2029]")


class JavaPTBTokenizer:
    """pycocoevalcap's PTBTokenizer, run on a sanitised copy of the input."""

    name = "ptb-java.3.4.1"

    def __init__(self, timeout: float = 600.0) -> None:
        self.timeout = timeout

    def tokenize_lines(self, texts: Sequence[str]) -> list[str]:
        """Return the raw tokenizer output line (space-separated, lower-cased) for each text."""
        if not texts:
            return []
        for k, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"texts[{k}] is a {type(text).__name__}, not a str")
        payload = "\n".join(_LINE_BREAKS.sub(" ", t) for t in texts) + "\n"
        cmd = [
            java_executable("the Java PTB tokenizer (tokenizer='ptb-java'; the default 'ptb' gives the same tokens without Java)"),
            "-cp",
            str(corenlp_ptb_jar()),
            "edu.stanford.nlp.process.PTBTokenizer",
            "-preserveLines",
            "-lowerCase",
        ]
        proc = subprocess.run(cmd, input=payload.encode("utf-8", "surrogatepass"), capture_output=True, timeout=self.timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"Java PTBTokenizer failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
        lines = proc.stdout.decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) != len(texts):
            raise RuntimeError(f"Java PTBTokenizer returned {len(lines)} lines for {len(texts)} captions.")
        return lines

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        from capeval.text import COCO_PUNCTUATION

        return [[w for w in line.rstrip().split(" ") if w and w not in COCO_PUNCTUATION] for line in self.tokenize_lines(texts)]
