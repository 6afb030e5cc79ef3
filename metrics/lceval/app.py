"""Hugging Face Space for the lceval module (capeval): typed captions in; both LCEval scores and the 16 features of
each caption out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``; no Java: METEOR runs in Python); the Hub
runs it the same way. The app loads the evaluate module of this folder (its script is named after the folder) and
is built by ``capeval.hf.space``. It scores with the shipped networks unless ``CAPEVAL_LCEVAL_MODEL`` or
``CAPEVAL_LCEVAL_RELEASED_MODEL`` name the folders of other ones.
"""
from capeval.hf.space import lceval_space

demo = lceval_space(__file__)

if __name__ == "__main__":
    demo.launch()
