"""Hugging Face Space for the pac_score module (capeval): images and typed captions in, PAC-S / RefPAC-S corpus and
per-caption tables out.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way. The app
loads the evaluate module of this folder (its script is named after the folder) and is built by
``capeval.hf.space.image_caption_app``. It scores with the PAC-S checkpoint ``clip_ViT-B-32.pth`` (the link in
aimagelab/pacscore's README) found in ``<capeval cache>/models/pac-s-clip-vit-b-32/``, unless ``CAPEVAL_PAC_MODEL``
names the checkpoint file (or a Hub repo holding it). Nothing is loaded before the first Score: without the
checkpoint the page shows where to put it.
"""
import os

from capeval.hf.space import image_caption_app, load_module
from capeval.io import example_images

METRICS = ("pac_s", "ref_pac_s")
#: What the Example button fills in beside the bundled photos (a cat, an astronaut, a coffee cup); the third
#: caption describes another picture.
EXAMPLE = (
    "a tabby cat looking at the camera\na smiling woman astronaut in an orange suit\na brown dog running on a beach",
    "a cat with grey stripes | a striped cat sitting and staring\n"
    "an astronaut in front of an american flag | a woman in a space suit smiles\n"
    "a cup of coffee on a saucer with a spoon | coffee in a white cup on a table",
)
OPTIONS = {"pac_model": os.environ["CAPEVAL_PAC_MODEL"]} if os.environ.get("CAPEVAL_PAC_MODEL") else {}

demo = image_caption_app(
    load_module(__file__), title="PAC-S and RefPAC-S (capeval)",
    description="PAC-S (Sarto et al., CVPR 2023), as the authors' code computes it: PAC-S = 2 · max(cos(image, "
                "\"A photo depicts \" + caption), 0), 0 to 2, no reference needed, with CLIP ViT-B/32 fine-tuned by "
                "positive-augmented contrastive learning on COCO; RefPAC-S = the harmonic mean of PAC-S and the "
                "caption's best cosine with its references. Upload one image per caption line, in order, or one "
                "image for all lines.",
    keys=list(METRICS), example=EXAMPLE, example_images=example_images(), metric_choices=METRICS, options=OPTIONS)

if __name__ == "__main__":
    demo.launch()
