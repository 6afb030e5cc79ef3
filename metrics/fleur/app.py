"""Hugging Face Space for the fleur module (capeval): images and typed captions with their references in, FLEUR /
RefFLEUR corpus and per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space.image_caption_app``. It judges with the paper's LLaVA-1.5-13B (``llava-hf/llava-1.5-13b-hf``,
fetched from the Hub into the Hugging Face cache at the first Score, about 26 GB; it needs a GPU Space) unless
``CAPEVAL_FLEUR_MODEL`` names another judge (a Hub id or a folder of any transformers image-text-to-text model, or
LLaVA's original layout). Nothing is loaded before the first Score.
"""
import os

from capeval.hf.space import image_caption_app, load_module
from capeval.io import example_images

METRICS = ("fleur", "ref_fleur")
#: What the Example button fills in beside the bundled photos (a cat, an astronaut, a coffee cup); the third
#: caption describes another picture.
EXAMPLE = (
    "a tabby cat looking at the camera\na smiling woman astronaut in an orange suit\na brown dog running on a beach",
    "a cat with grey stripes | a striped cat sitting and staring\n"
    "an astronaut in front of an american flag | a woman in a space suit smiles\n"
    "a cup of coffee on a saucer with a spoon | coffee in a white cup on a table",
)
OPTIONS = {"fleur_model": os.environ["CAPEVAL_FLEUR_MODEL"]} if os.environ.get("CAPEVAL_FLEUR_MODEL") else {}

demo = image_caption_app(
    load_module(__file__), title="FLEUR and RefFLEUR (capeval)",
    description="FLEUR (Lee et al., ACL 2024), as the authors' fleur.py computes it: a large multimodal model "
                "(LLaVA-1.5-13B) rates each caption against its image from 0.0 to 1.0, and the answer's digits are "
                "smoothed over their token probabilities; 0 to 1, higher = better, no reference needed. RefFLEUR "
                "adds the references to the question. A caption whose answer has no usable number scores NaN and is "
                "left out of the mean. Upload one image per caption line, in order, or one image for all lines. The "
                "first Score loads the judge (about 26 GB from the Hub the first time; a GPU is needed).",
    keys=list(METRICS), example=EXAMPLE, example_images=example_images(), metric_choices=METRICS, options=OPTIONS)

if __name__ == "__main__":
    demo.launch()
