"""Reading ``capeval bench --json`` payloads for the leaderboard: files and directories (:func:`read_payloads`), each
checked to be a bench payload (:func:`payload_problem`)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from capeval.registry import judged_benchmarks

def payload_problem(obj: Any) -> str | None:
    """Why ``obj`` is not a ``capeval bench --json`` payload (``{benchmark, settings, results, notes}``), or None."""
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}, not an object"
    missing = [k for k in ("benchmark", "results") if k not in obj]
    if missing:
        return f"no {' or '.join(repr(k) for k in missing)} key"
    if obj["benchmark"] not in judged_benchmarks():
        return f"benchmark {obj['benchmark']!r} is not one capeval bench scores ({', '.join(judged_benchmarks())})"
    if not isinstance(obj["results"], dict) or not all(isinstance(v, dict) for v in obj["results"].values()):
        return "'results' is not an object of per-metric objects"
    if not isinstance(obj.get("settings", {}), dict):
        return "'settings' is not an object"
    return None


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err.msg}, line {err.lineno})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not JSON (not UTF-8 text)") from None


def read_payloads(paths: Iterable[str | Path]) -> tuple[list[tuple[str, dict]], list[str]]:
    """``([(file, payload), ...], skipped)`` for files and directories of ``capeval bench --json`` payloads.

    A directory contributes every ``*.json`` directly inside it (sorted by name) that is a bench payload; the others
    are listed in ``skipped`` (``"FILE: why"``). A file named explicitly must be one: ``ValueError`` naming it
    otherwise; a missing path raises ``FileNotFoundError``; no payload at all raises ``ValueError``.
    """
    found: list[tuple[str, dict]] = []
    skipped: list[str] = []
    paths = [Path(p) for p in paths]
    for path in paths:
        if path.is_dir():
            for file in sorted(p for p in path.glob("*.json") if p.is_file()):
                try:
                    obj = _load_json(file)
                except ValueError as err:
                    skipped.append(str(err))
                    continue
                why = payload_problem(obj)
                if why:
                    skipped.append(f"{file}: not a capeval bench payload ({why})")
                else:
                    found.append((str(file), obj))
        elif path.exists():
            obj = _load_json(path)
            why = payload_problem(obj)
            if why:
                raise ValueError(f"{path}: not a capeval bench payload ({why}); expected the "
                                 "{benchmark, settings, results} object `capeval bench --json` writes")
            found.append((str(path), obj))
        else:
            raise FileNotFoundError(2, "No such file or directory", str(path))
    if not found:
        why = f"; skipped {'; '.join(skipped)}" if skipped else ""
        raise ValueError(f"no capeval bench payload in {', '.join(map(str, paths))} (write them with "
                         f"`capeval bench BENCHMARK --metrics ... --json FILE`){why}")
    return found, skipped
