"""Hugging Face Space for the thumb module (capeval): typed captions in, corpus and per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space``.
"""
from capeval.hf.space import thumb_space

demo = thumb_space(__file__)

if __name__ == "__main__":
    demo.launch()
