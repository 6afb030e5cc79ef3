"""Hugging Face Space for the clip_score module (capeval): images and typed captions in, CLIP-S / RefCLIP-S corpus
and per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space.image_caption_app``. It scores with OpenAI's CLIP ViT-B/32 (``openai/clip-vit-base-patch32``,
fetched from the Hub into the Hugging Face cache at the first Score) unless ``CAPEVAL_CLIP_MODEL`` names another
CLIP (a Hub id, a folder, a checkpoint file, ``open_clip:<name>/<tag>``). Nothing is loaded before the first Score.
"""
import os

from capeval.hf.space import image_caption_app, load_module
from capeval.io import example_images

METRICS = ("clip_s", "ref_clip_s")
#: What the Example button fills in beside the bundled photos (a cat, an astronaut, a coffee cup); the third
#: caption describes another picture.
EXAMPLE = (
    "a tabby cat looking at the camera\na smiling woman astronaut in an orange suit\na brown dog running on a beach",
    "a cat with grey stripes | a striped cat sitting and staring\n"
    "an astronaut in front of an american flag | a woman in a space suit smiles\n"
    "a cup of coffee on a saucer with a spoon | coffee in a white cup on a table",
)
OPTIONS = {"clip_model": os.environ["CAPEVAL_CLIP_MODEL"]} if os.environ.get("CAPEVAL_CLIP_MODEL") else {}

demo = image_caption_app(
    load_module(__file__), title="CLIP-S and RefCLIP-S (capeval)",
    description="CLIPScore (Hessel et al., EMNLP 2021), as the authors' clipscore.py computes it: CLIP-S = "
                "2.5 · max(cos(image, \"A photo depicts \" + caption), 0), 0 to 2.5, no reference needed; RefCLIP-S = "
                "the harmonic mean of CLIP-S and the caption's best cosine with its references. CLIP ViT-B/32 "
                "(OpenAI; its 400M training pairs are undisclosed). Upload one image per caption line, in order, or "
                "one image for all lines. The first Score loads CLIP (about 600 MB from the Hub the first time).",
    keys=list(METRICS), example=EXAMPLE, example_images=example_images(), metric_choices=METRICS, options=OPTIONS)

if __name__ == "__main__":
    demo.launch()
