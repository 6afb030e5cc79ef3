"""Hugging Face Space for the THumB module: a table with one row per caption (P, R, penalties)."""
import os

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "thumb.py"))
launch_gradio_widget(module)
