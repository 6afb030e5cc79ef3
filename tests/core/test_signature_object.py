"""Signatures kept as data until formatted (sacrebleu's Signature): the string users see, with its fields."""
from __future__ import annotations

import json
import pickle

import capeval
from capeval.signature import Signature, parse_signature, signature_lines


def test_a_result_s_signature_is_the_string_and_its_fields():
    result = capeval.score(["a dog runs"], [["a dog runs fast", "a dog"]], metrics=["bleu", "cider_d"])
    signature = result["signature"]
    assert isinstance(signature, str) and isinstance(signature, Signature)
    assert signature == "|".join(f"{k}:{v}" for k, v in signature.fields)
    assert signature.get("nrefs") == "2" and signature.get("version") == capeval.__version__
    assert [k for k, _ in signature.metric_fields()] == ["bleu", "cider_d"]
    assert json.loads(json.dumps(result["signature"])) == str(signature)  # JSON sees the string
    again = pickle.loads(pickle.dumps(signature))
    assert again == signature and again.fields == signature.fields


def test_fields_change_without_string_surgery_and_files_are_parsed_once():
    signature = Signature.build({"nrefs": "5", "clean": "none"}, [("bleu", "closest"), ("cider_d", "df=refs,sigma=6")])
    assert str(signature.with_field("nrefs", "var")).startswith("nrefs:var|clean:none|bleu:closest|")
    read_back = Signature.of(str(signature))  # a string from a result.json
    assert read_back.fields == signature.fields and Signature.of(signature) is signature
    assert parse_signature(str(signature))["cider_d"] == "df=refs,sigma=6"
    assert signature_lines(signature, width=0) == signature_lines(str(signature), width=0)
