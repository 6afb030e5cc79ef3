"""Hugging Face Space for the polos module (capeval): images and typed captions with their references in, Polos corpus
and per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space.image_caption_app``. It scores with the released Polos checkpoint (``reprod.zip`` from the link in
keio-smilab24/Polos's README, unzipped into ``<capeval cache>/models/polos/``), unless ``CAPEVAL_POLOS_MODEL`` names
the checkpoint's folder or file. Nothing is loaded before the first Score: without the checkpoint the page shows where
to put it.
"""
import os

from capeval.hf.space import image_caption_app, load_module
from capeval.io import example_images

METRICS = ("polos",)
#: What the Example button fills in beside the bundled photos (a cat, an astronaut, a coffee cup); the third
#: caption describes another picture.
EXAMPLE = (
    "a tabby cat looking at the camera\na smiling woman astronaut in an orange suit\na brown dog running on a beach",
    "a cat with grey stripes | a striped cat sitting and staring\n"
    "an astronaut in front of an american flag | a woman in a space suit smiles\n"
    "a cup of coffee on a saucer with a spoon | coffee in a white cup on a table",
)
OPTIONS = {"polos_model": os.environ["CAPEVAL_POLOS_MODEL"]} if os.environ.get("CAPEVAL_POLOS_MODEL") else {}

demo = image_caption_app(
    load_module(__file__), title="Polos (capeval)",
    description="Polos (Wada et al., CVPR 2024), from the authors' released checkpoint as their code computes it: "
                "SimCSE and CLIP ViT-B/32 features of the caption, its references and the image, and a network "
                "trained on Polaris's human judgments; 0 to 1, higher = better, the best over the references. Upload "
                "one image per caption line, in order, or one image for all lines.",
    keys=list(METRICS), example=EXAMPLE, example_images=example_images(), metric_choices=METRICS, options=OPTIONS)

if __name__ == "__main__":
    demo.launch()
