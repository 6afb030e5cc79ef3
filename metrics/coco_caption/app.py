"""Hugging Face Space for the COCO caption metrics: one row per caption (prediction, references)."""
import os

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "coco_caption.py"))
launch_gradio_widget(module)
