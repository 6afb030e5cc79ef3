"""Hugging Face Space for the SPICE-U metric (capeval)."""
import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("spice_u.py")
launch_gradio_widget(module)
