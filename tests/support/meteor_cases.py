"""Captions METEOR's tests align: hand-made hostile pairs and a seeded random caption over every stage's words."""
from __future__ import annotations

import random

HOSTILE = [
    ("a dog\nruns ||| on grass", ["a dog runs\non the grass", "|||", "dogs\x85running"]),
    ("a cat\r\nsits\u2028here", ["a cat sits\rthere", "a cat\x0bon a mat"]),
    ("", ["an empty prediction"]),
    ("\U0001F436 emoji dog caf\u00e9", ["a dog \U0001F436 in a caf\u00e9", "\u2029"]),
    ("x\x00y", ["x y"]),
    ("\u4e00\u53ea\u72d7\u5728\u8349\u5730\u4e0a\u5954\u8dd1", ["\u72d7\u5728\u8dd1", "a dog runs"]),
    ("\u0421\u043e\u0431\u0430\u043a\u0430 \u0431\u0435\u0436\u0438\u0442", ["\u0441\u043e\u0431\u0430\u043a\u0430 \u0431\u0435\u0436\u0438\u0442 \u043f\u043e \u0442\u0440\u0430\u0432\u0435"]),
    ("Mr. Smith's U.S.-made car... isn't it?", ["mr. smith 's us made car is n't it ?", "A car, made in the U.S."]),
    ("the the the the the", ["the"]),
    ("a man riding a bike down a street", ["a group of people are riding bikes down the street in a bike lane"]),
    ("a a a a a a a a a a a a", ["a a a a a a a a a a a a a"]),
    ("3,000 people at 10.5 p.m. -- wow", ["3000 people at 10.5 pm - wow", "thousands of people"]),
]


def random_caption(rng: random.Random) -> str:
    words = ["a", "the", "dog", "dogs", "man", "men", "riding", "rides", "bike", "bicycle", "street", "road", "on",
             "of", "in", "big", "large", "small", "little", "is", "are", "playing", "plays", "grass", "lawn", "photo",
             "picture", "U.S.", "Mr.", "isn't", "'s", ",", ".", "...", "--", "\u2019", "\u201c", "caf\u00e9", "\u00e9t\u00e9",
             "\u0441\u043e\u0431\u0430\u043a\u0430", "\u72d7", "3,000", "10.5", "|||", "\t", "\n", "\x07"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(0, 14)))
