"""Printable HTML annotation sheet: the THumB 1.0 rubric, the fluency-penalty table, blank score cells.

The rubric text summarises Kasai et al. (2022) §2.2; the fluency table is their appendix Table 6.
Images are shown when an ``image_url`` template is given (``{image}`` is replaced by the image id).
No system name appears anywhere on the page.
"""
from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from capeval.thumb.sheets import SheetItem

#: Appendix Table 6 of Kasai et al. (2022): fluency error type, penalty, example.
FLUENCY_PENALTIES: tuple[tuple[str, str, str], ...] = (
    ("Obvious spelling error, one vs. two words", "0.1", "cel phone, surf board"),
    ("Grammatical error that can be easily fixed", "0.1", "a otter"),
    ("Casing issue", "0.1", "tv, christmas"),
    ("Hyphenation", "0.1", "horse drawn carriage"),
    ("Interpretable but unnatural wording", "0.1", "double decked bus"),
    ("Non-trivial punctuation", "0.2", "A bird standing in the wooded area with leaves all around."),
    ("Misleading spelling error", "0.5", "A good stands in the grass next to the water. (good → goose)"),
    ("Duplication", "0.5", "A display case of donuts and doughnuts."),
    ("Ambiguity", "0.5", "A cat is on a table with a cloth on it."),
    ("Awkward construction", "0.1–0.5", "There is a freshly made pizza out of the oven."),
    ("Broken sentence", "0.5+", "A large concrete sign small buildings behind it."),
)

RUBRIC_HTML = """
<h2>Rubric (THumB 1.0, Kasai et al. 2022)</h2>
<p>Score every caption of an image; captions are shuffled and their sources hidden.</p>
<ul>
<li><b>Precision (P, 1–5)</b>: how accurate the caption is for the image. Hallucinated objects, wrong
objects, counts, attributes, locations or relations lose points. 4 is for minor issues (an attribute that is
almost right, or a statement the image does not contradict but does not guarantee).</li>
<li><b>Recall (R, 1–5)</b>: how much of the salient content of the image (objects, attributes, relations,
what is happening) the caption covers. Generic captions score low. Ask: does the caption lead you to imagine
this image, or many different ones? Missing information that the caption already implies is not penalised.</li>
<li><b>Fluency penalty (Flu.)</b>: points deducted for problems of the text as English, regardless of the
image: 0.1 when an automatic post-editor could fix it easily, 0.5 or more for severe problems (see the table).</li>
<li><b>Conciseness penalty (Con.)</b>: 0.5 for an overly long, repetitive caption that lists every detail.</li>
<li><b>Inclusive-language penalty (Inc.)</b>: 0.5 for a subjective comment about a person's appearance,
2 for more severe problems.</li>
</ul>
<p><b>Rules.</b> No double penalties: an error counted in precision is corrected before scoring recall
(this does not apply to hallucinated objects). Object counts are attributes, so a wrong count is a precision
error. Ignore whether a caption mentions that a photo is black and white.</p>
<p><b>Total</b> = (P + R) / 2 − Flu. − Con. − Inc. Leave a penalty cell empty when there is no problem.
In the CSV sheet, write P and R as integers 1–5 and penalties as 0.1, 0.5, … (multiples of 0.1).</p>
"""

CSS = """
body { font-family: sans-serif; font-size: 11pt; margin: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1.2em 0; }
th, td { border: 1px solid #888; padding: 4px 6px; vertical-align: top; }
td.score { width: 3.2em; }
td.notes { width: 12em; }
.image-block { page-break-inside: avoid; break-inside: avoid; margin-bottom: 1.5em; }
.image-block img { max-width: 420px; max-height: 320px; display: block; margin: 0.3em 0; }
@media print { .rubric { page-break-after: always; } }
"""


#: Heading of the fluency-penalty table (also the Label Studio configuration's).
FLUENCY_TABLE_TITLE = "Fluency penalties (Kasai et al. 2022, Table 6)"


def rubric_parts() -> list[str]:
    """The rubric and the fluency-penalty table as HTML lines (``<div class="rubric">…</div>``).

    Shared by the printable page and Label Studio's ``instructions.html``
    (:mod:`capeval.thumb.label_studio`), so both show the same text.
    """
    parts = ['<div class="rubric">', RUBRIC_HTML, f"<h3>{escape(FLUENCY_TABLE_TITLE)}</h3>",
             "<table><tr><th>Fluency error type</th><th>Penalty</th><th>Example</th></tr>"]
    for kind, penalty, example in FLUENCY_PENALTIES:
        parts.append(f"<tr><td>{escape(kind)}</td><td>{escape(penalty)}</td><td><i>{escape(example)}</i></td></tr>")
    parts.append("</table></div>")
    return parts


def image_src(image_url: str, image: str) -> str:
    """The image address for an ``image_url`` template (``{image}`` replaced by the image id)."""
    return image_url.replace("{image}", image)


def render_html(items: Sequence[SheetItem], title: str = "THumB annotation sheet", image_url: str | None = None) -> str:
    """The whole printable page as a string."""
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        *rubric_parts(),
    ]

    by_image: dict[str, list[SheetItem]] = {}
    for it in items:
        by_image.setdefault(it.image, []).append(it)
    for image, group in by_image.items():
        number = group[0].item.split("-")[0]
        parts.append('<div class="image-block">')
        parts.append(f"<h3>Image {escape(number)}: {escape(image)}</h3>")
        if image_url:
            src = image_src(image_url, image)
            parts.append(f'<img src="{escape(src, quote=True)}" alt="image {escape(image, quote=True)}">')
        parts.append("<table><tr><th>Item</th><th>Caption</th><th>P</th><th>R</th><th>Flu.</th><th>Con.</th>"
                     "<th>Inc.</th><th>Notes</th></tr>")
        for it in group:
            cells = '<td class="score"></td>' * 5
            parts.append(f"<tr><td>{escape(it.item)}</td><td>{escape(it.caption)}</td>{cells}"
                         '<td class="notes"></td></tr>')
        parts.append("</table></div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_sheet_html(path: str | Path, items: Sequence[SheetItem], title: str = "THumB annotation sheet",
                     image_url: str | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(items, title=title, image_url=image_url), encoding="utf-8")
