"""Hugging Face Space for the SPICE metric (capeval)."""
import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("spice.py")
launch_gradio_widget(module)
