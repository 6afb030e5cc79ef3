"""Hugging Face Space for the coco_caption module (capeval): type captions, get corpus and per-caption tables.

Run locally with ``python app.py`` (``pip install -r requirements.txt``); the Hub runs it the same way.
"""
import os

import evaluate
from capeval.hf.space import caption_app
from capeval.registry import result_keys

# the folder of this file: evaluate.load finds the script named after it (metrics/coco_caption/coco_caption.py, or a built Space)
module = evaluate.load(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = ("a dog runs across the grass\na man rides a red bike down the street\ntwo cats sleep on a sofa",
           "a brown dog running on a lawn | a dog plays in the grass\na man riding a bicycle on a road | a cyclist in the city | a person on a red bike\ntwo cats lying on a couch")
demo = caption_app(
    module,
    title='COCO caption metrics (capeval)',
    description="BLEU-1..4, METEOR 1.5, ROUGE-L and CIDEr-D with pycocoevalcap's numbers. CIDEr-D's document frequencies come from the references you type, so it needs several captions to mean much.",
    example=EXAMPLE,
    keys=result_keys("bleu") + result_keys("meteor") + result_keys("rouge_l") + result_keys("cider_d"),
    metric_choices=["bleu", "meteor", "rouge_l", "cider_d"],
    default_metrics=["bleu", "rouge_l", "cider_d"],  # METEOR starts a Java VM (~20 s): tick it to add it
)

if __name__ == "__main__":
    demo.launch()
