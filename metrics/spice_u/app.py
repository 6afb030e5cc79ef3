"""Hugging Face Space for the spice_u module (capeval): type captions, get corpus and per-caption tables.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way.
"""
import os

import evaluate
from capeval.hf.space import caption_app
from capeval.registry import result_keys

# the folder of this file: evaluate.load finds the script named after it (metrics/spice_u/spice_u.py, or a built Space)
module = evaluate.load(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = ("a dog runs across the grass\na man rides a red bike down the street\ntwo cats sleep on a sofa",
           "a brown dog running on a lawn | a dog plays in the grass\na man riding a bicycle on a road | a cyclist in the city | a person on a red bike\ntwo cats lying on a couch")
demo = caption_app(
    module,
    title='SPICE-U (capeval)',
    description="SPICE-U: SPICE weighted by how unique each caption's concepts are (uniqueness table from COCO train2014).",
    example=EXAMPLE,
    keys=result_keys("spice_u"),
)

if __name__ == "__main__":
    demo.launch()
