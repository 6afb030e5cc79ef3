"""``capeval score --images FILE`` / ``--image-dir DIR``: one image per prediction, for metrics that read images."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.cli import main
from capeval.io import image_candidates, images_from_dir, load_image_list
from support import image_metric
from support.image_metric import image_score

FAST = "bleu,rouge_l,cider_d"


@pytest.fixture
def fake(monkeypatch) -> str:
    return image_metric.register(monkeypatch)


@pytest.fixture
def files(tmp_path):
    """Predictions (COCO results, ids 3, 1, 2), references by id, and an image folder with three naming styles."""
    folder = tmp_path / "imgs"
    folder.mkdir()
    for name in ("3", "1.jpg", "COCO_val2014_000000000002.jpg"):  # as given, with .jpg, COCO val2014 name
        (folder / name).write_bytes(f"image {name}".encode())
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"image_id": 3, "caption": "a bird flies"}, {"image_id": 1, "caption": "a dog"},
                                 {"image_id": 2, "caption": "a cat on a mat"}]))
    refs = tmp_path / "r.json"
    refs.write_text(json.dumps({"1": ["a dog runs"], "2": ["a cat sits on a mat"], "3": ["a bird in the sky"]}))
    return preds, refs, folder, [folder / "3", folder / "1.jpg", folder / "COCO_val2014_000000000002.jpg"]


def _run(capsys, *args):
    rc = main(["score", *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _per_caption(path: Path, key: str) -> list[float]:
    return json.loads(path.read_text())["per_caption"][key]


def test_images_file_of_relative_paths(tmp_path, files, fake, capsys):
    preds, refs, _, expected = files
    listing = tmp_path / "images.txt"
    listing.write_text("imgs/3\n  imgs/1.jpg  \n" + str(expected[2]) + "\n\n")  # relative, padded, absolute
    assert load_image_list(listing) == [str(p) for p in expected]
    out = tmp_path / "out.json"
    rc, _, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", f"bleu_1,{fake}",
                      "--images", listing, "--json", out)
    assert rc == 0, err
    assert _per_caption(out, fake) == [image_score(p) for p in expected]


def test_images_json_list(tmp_path, files):
    _, _, _, expected = files
    listing = tmp_path / "images.json"
    listing.write_text(json.dumps(["imgs/3", "imgs/1.jpg", "imgs/COCO_val2014_000000000002.jpg"]))
    assert load_image_list(listing) == [str(p) for p in expected]


@pytest.mark.parametrize("content, message", [
    ("imgs/3\n\nimgs/1.jpg\n", "line 2 is empty"),
    ("imgs/3\nimgs/nope.jpg\n", "line 2: image file"),
    ('["imgs/3", 4]', "item 1 is a number"),
    ('{"a": 1}', "expected a JSON list"),
    ("\n\n", "no image paths"),
])
def test_bad_images_file_names_the_line(tmp_path, files, content, message):
    listing = tmp_path / "images.txt"
    listing.write_text(content)
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        load_image_list(listing)


def test_images_file_length_mismatch(tmp_path, files, fake, capsys):
    preds, refs, _, _ = files
    listing = tmp_path / "images.txt"
    listing.write_text("imgs/3\nimgs/1.jpg\n")
    rc, _, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", fake, "--images", listing)
    assert rc == 1 and "lists 2 image(s) but p.json has 3 prediction(s)" in err


def test_image_dir_resolves_ids(tmp_path, files, fake, capsys):
    preds, refs, folder, expected = files
    assert images_from_dir([3, "1", 2], folder) == [str(p) for p in expected]
    assert image_candidates(7, folder)[-1].name == "COCO_val2014_000000000007.jpg"
    assert [p.name for p in image_candidates("x.png", folder)] == ["x.png", "x.png.jpg"]
    out = tmp_path / "out.json"
    rc, _, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", fake, "--image-dir", folder,
                      "--json", out)
    assert rc == 0, err
    assert _per_caption(out, fake) == [image_score(p) for p in expected]


def test_image_dir_names_the_first_unresolved(tmp_path, files, fake, capsys):
    preds, refs, folder, _ = files
    (folder / "1.jpg").unlink()
    rc, _, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", fake, "--image-dir", folder)
    assert rc == 1 and "prediction 1 (image id 1): tried 1, 1.jpg, COCO_val2014_000000000001.jpg" in err


def test_image_dir_needs_ids(tmp_path, files, fake, capsys):
    _, _, folder, _ = files
    preds, refs = tmp_path / "plain.json", tmp_path / "plain_refs.json"
    preds.write_text(json.dumps(["a dog"]))
    refs.write_text(json.dumps([["a dog runs"]]))
    rc, _, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", fake, "--image-dir", folder)
    assert rc == 1 and "carry no image ids" in err and "--images FILE" in err


def test_csv_image_column_and_split_captioners(tmp_path, fake, capsys):
    """A CSV 'image' column names files; --duplicate-ids split gives each captioner its own rows' images."""
    folder = tmp_path / "imgs"
    folder.mkdir()
    for name in ("a.jpg", "b.jpg"):
        (folder / name).write_bytes(name.encode() * 4)
    preds = tmp_path / "p.csv"
    preds.write_text("image,caption\na.jpg,a dog\nb.jpg,a cat\na.jpg,a brown dog\nb.jpg,a black cat\n")
    refs = tmp_path / "r.csv"
    refs.write_text("image,reference\na.jpg,a dog runs\nb.jpg,a cat sleeps\n")
    out = tmp_path / "out.json"
    rc, _, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", fake, "--image-dir", folder,
                      "--duplicate-ids", "split", "--json", out)
    assert rc == 0, err
    want = [image_score(folder / "a.jpg"), image_score(folder / "b.jpg")]
    assert [c["per_caption"][fake] for c in json.loads(out.read_text())["captioners"]] == [want, want]


def test_image_metric_without_images_names_it(files, fake, capsys):
    preds, refs, _, _ = files
    rc, _, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", fake)
    assert rc == 1 and "fake_img needs one image per prediction: give --images FILE" in err and "--image-dir DIR" in err
    assert "images=" not in err  # the command's flags, not capeval.score's keyword


def test_text_metrics_ignore_images_and_flags_are_exclusive(tmp_path, files, capsys):
    preds, refs, folder, _ = files
    plain, with_images = tmp_path / "plain.json", tmp_path / "with.json"
    assert _run(capsys, "--predictions", preds, "--references", refs, "--metrics", FAST, "--json", plain)[0] == 0
    assert _run(capsys, "--predictions", preds, "--references", refs, "--metrics", FAST, "--image-dir", folder,
                "--json", with_images)[0] == 0
    assert json.loads(plain.read_text()) == json.loads(with_images.read_text())
    with pytest.raises(SystemExit):
        main(["score", "--example", "--images", "x.txt", "--image-dir", str(folder)])
    assert "not allowed with argument" in capsys.readouterr().err
