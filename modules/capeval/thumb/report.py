"""Tables of a :func:`capeval.thumb.score` result in the layout of THumB's Tables 2 and 3."""
from __future__ import annotations

from typing import Any

from capeval.render import markdown_table, text_table
from capeval.thumb.published import TABLE2, TABLE2_DIGITS, TABLE3


TABLE2_COLUMNS = ("precision", "recall", "fluency", "conciseness", "inclusive", "total")


def _ci(entry: dict[str, Any]) -> str:
    ci = entry.get("total_ci")
    if ci is None:
        return ""
    low, high = ci
    return f"-{entry['total'] - low:.3f}/+{high - entry['total']:.3f}"


def system_order(result: dict[str, Any]) -> list[str]:
    """Systems by decreasing total (the paper's order), ties by name."""
    return sorted(result["systems"], key=lambda s: (-result["systems"][s]["total"], s))


def system_rows(result: dict[str, Any], paper: bool = False) -> tuple[list[str], list[list[Any]]]:
    """Table 2 + Table 3 columns per system; with ``paper=True`` the published values beside them."""
    level = _level(result)
    headers = ["system", "n", "P", "R", "Flu.", "Con.", "Inc.", "total", f"{level} CI", "#best", "#worst"]
    if paper:
        headers += ["paper total", "paper #best", "paper #worst"]
    rows = []
    for name in system_order(result):
        e = result["systems"][name]
        row = [
            name, e["n"],
            *(_round(e[k], TABLE2_DIGITS[k] + 1) for k in TABLE2_COLUMNS),
            _ci(e),
            "" if e["strictly_best"] is None else e["strictly_best"],
            "" if e["strictly_worst"] is None else e["strictly_worst"],
        ]
        if paper:
            pub2, pub3 = TABLE2.get(name), TABLE3.get(name)
            row += [
                f"{pub2['total']:.2f}±{pub2['total_ci']:.2f}" if pub2 else "",
                pub3[0] if pub3 else "",
                pub3[1] if pub3 else "",
            ]
        rows.append(row)
    return headers, rows


def _round(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def _level(result: dict[str, Any]) -> str:
    from capeval.signature import Signature

    boot = Signature.of(result["signature"]).get("boot") or ""
    settings = dict(part.partition("=")[::2] for part in boot.split(",") if "=" in part)
    return f"{float(settings['ci']) * 100:g}%" if "ci" in settings else "no"


def format_report(result: dict[str, Any], fmt: str = "text", paper: bool = False) -> str:
    """The report printed by ``capeval thumb report`` / ``collect`` (text or markdown)."""
    headers, rows = system_rows(result, paper=paper)
    render = markdown_table if fmt == "markdown" else text_table
    lines = []
    n = len(result["per_caption"]["total"])
    overall_ci = result.get("total_ci")
    ci_text = f" ({_level(result)} CI {overall_ci[0]:.3f}–{overall_ci[1]:.3f})" if overall_ci else ""
    lines.append(f"{n} captions, mean total {result['total']:.4f}{ci_text}")
    if rows:
        lines.append(render(headers, rows))
        lines.append(
            "P, R: 1-5 (higher is better); Flu./Con./Inc.: mean penalty points (lower is better); "
            "#best/#worst: images where the system is best/worst in both P and R (ties count)."
        )
    if paper and rows:
        lines += _worst_note(result)
    lines.append(f"signature: {result['signature']}")
    return "\n".join(lines)


def _worst_note(result: dict[str, Any]) -> list[str]:
    """The note under a ``--paper`` report whose #worst counts differ from the paper's Table 3 (the THumB 1.0 release
    gives 8-15 more per system; docs/benchmarks/thumb.md)."""
    systems = [s for s in system_order(result) if s in TABLE3 and result["systems"][s]["strictly_worst"] is not None]
    ours = [result["systems"][s]["strictly_worst"] for s in systems]
    theirs = [TABLE3[s][1] for s in systems]
    if ours == theirs:
        return []
    best = all(result["systems"][s]["strictly_best"] == TABLE3[s][0] for s in systems)
    return [f"note: #worst differs from the paper's Table 3 ({'/'.join(map(str, ours))} here, "
            f"{'/'.join(map(str, theirs))} in the paper){' while #best matches it exactly' if best else ''}. No "
            "definition of best/worst tried reproduces the paper's #worst row (the one used here, best or worst in "
            "both P and R with ties counting, reproduces its #best row); most likely the released file is not the one "
            "the paper's tables were computed from (the 2022 data fix changed Human captions). See "
            "docs/benchmarks/thumb.md, Table 3."]
