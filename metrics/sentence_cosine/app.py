"""Hugging Face Space for the sentence_cosine module (capeval): typed captions in, corpus and per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space``. The sentence encoder (all-MiniLM-L6-v2, offline) is loaded at the first Score.
"""
from capeval.hf.space import caption_space

demo = caption_space(__file__, "sentence_cosine")

if __name__ == "__main__":
    demo.launch()
