"""Hugging Face Space for the learned_critic module (capeval): images and typed captions in, corpus and
per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space``. It scores with the shipped critics unless ``CAPEVAL_CRITIC_MODEL``,
``CAPEVAL_CRITIC_REF_MODEL``, ``CAPEVAL_CRITIC_IMG_MODEL`` or ``CAPEVAL_CRITIC_PLUS_MODEL`` name the folders of other
trained critics (or of a ``capeval critic fit-plus`` combiner).
"""
from capeval.hf.space import critic_space

demo = critic_space(__file__)

if __name__ == "__main__":
    demo.launch()
