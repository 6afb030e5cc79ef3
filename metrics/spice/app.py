"""Hugging Face Space for the spice metric (capeval)."""
import os

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "spice.py"))
launch_gradio_widget(module)
