"""Hugging Face Space for the THumB module (capeval): rubric rows in, corpus / per-caption / per-system tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way.
"""
import os

import evaluate
from capeval.hf.space import thumb_app

# the folder of this file: evaluate.load finds the script named after it (metrics/thumb/thumb.py, or a built Space)
module = evaluate.load(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = """precision, recall, fluency, conciseness, inclusive, system
5, 5, 0, 0, 0, human
4, 3, -0.1, 0, 0, model
5, 4, 0, 0, 0, human
3, 3, 0, -0.2, 0, model"""
demo = thumb_app(
    module,
    title="THumB 1.0 (capeval)",
    description="THumB rubric aggregation: total = mean of precision and recall (1-5) minus the fluency, "
                "conciseness and inclusive-language penalties, per caption and per system.",
    example=EXAMPLE,
)

if __name__ == "__main__":
    demo.launch()
