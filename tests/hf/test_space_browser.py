"""Every metrics/<name>/app.py in a real browser: launched on 127.0.0.1, driven with Playwright (Debian's
chromium), the example clicked, the numbers shown compared with capeval.score's, bad input submitted and its
message read. Screenshots go to $CAPEVAL_TEST_ARTIFACTS (default: test-artifacts/spaces/ in the checkout).

Skips cleanly without gradio, playwright or a chromium executable ($CHROMIUM, else `chromium` on PATH).
"""
from __future__ import annotations

import os
import runpy
import shutil
import socket
from pathlib import Path

import pytest
from support import ROOT, needs

gr = pytest.importorskip("gradio")
sync_api = pytest.importorskip("playwright.sync_api")

import capeval  # noqa: E402
from capeval.hf.space import load_module  # noqa: E402
from capeval.hf.space_inputs import (CAPTION_EXAMPLE, CRITIC_DEFAULT_METRICS, CRITIC_EXAMPLE,  # noqa: E402
                                     CRITIC_METRICS, CRITIC_MODEL_ENV, DIGITS, LCEVAL_EXAMPLE, LCEVAL_METRICS,
                                     THUMB_EXAMPLE, parse_predictions, parse_references)
from capeval.io import example_images  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no chromium executable (apt-get install chromium)"),
              pytest.mark.timeout(600)]
ARTIFACTS = Path(os.environ.get("CAPEVAL_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "spaces"
CAPTION_APPS = {"coco_caption": "bleu,rouge_l,cider_d", "spice": "spice", "spice_u": "spice_u"}


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield b
        b.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(name: str):
    app = runpy.run_path(str(ROOT / "metrics" / name / "app.py"), run_name="app")
    port = _free_port()
    app["demo"].launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    return app, f"http://127.0.0.1:{port}/"


def _table(page, elem_id: str) -> list[list[str]]:
    """The cells shown by the gr.Dataframe ``elem_id`` (gradio 6: div rows of ARIA grid cells), row by row."""
    rows = page.query_selector_all(f"#{elem_id} div[role=row]")
    return [cells for cells in ([c.inner_text().strip() for c in r.query_selector_all("[role=gridcell]")]
                                for r in rows) if cells]


def _wait_for_rows(page, elem_id: str, text: str) -> None:
    """Wait until a grid cell of ``elem_id`` shows ``text`` (the callback has returned and the table is drawn)."""
    page.wait_for_function(
        "([id, text]) => [...document.querySelectorAll('#' + id + ' [role=gridcell]')]"
        ".some(c => c.innerText.trim() === text)", arg=[elem_id, text], timeout=120_000)


def _bad_input_message(page, shot: Path, fill: dict[str, str], expected: str) -> None:
    for selector, value in fill.items():
        page.fill(selector, value)
    page.click("#score")
    toast = page.get_by_text(expected, exact=False).first
    toast.wait_for(timeout=60_000)
    page.screenshot(path=str(shot), full_page=True)
    assert expected in toast.inner_text()


@pytest.mark.parametrize("name", sorted(CAPTION_APPS))
def test_caption_space_in_a_browser(name, browser):
    needs(name)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    app, url = _launch(name)
    try:
        page = browser.new_page()
        page.goto(url)
        page.click("#example")
        _wait_for_rows(page, "corpus", CAPTION_APPS[name].split(",")[-1])
        _wait_for_rows(page, "per_caption", parse_predictions(CAPTION_EXAMPLE[0])[-1])
        page.screenshot(path=str(ARTIFACTS / f"{name}-example.png"), full_page=True)
        predictions, references = CAPTION_EXAMPLE
        want = capeval.score(parse_predictions(predictions), parse_references(references, 3),
                             metrics=CAPTION_APPS[name])
        corpus = _table(page, "corpus")
        assert [row[0] for row in corpus] == [k for k in want if k in dict(corpus)]
        for key, shown in corpus:
            assert float(shown) == round(want[key], DIGITS), key
        per_caption = _table(page, "per_caption")
        keys = [row[0] for row in corpus]
        assert len(per_caption) == 3
        for i, row in enumerate(per_caption):
            assert row[0] == str(i + 1) and row[1] == parse_predictions(predictions)[i]
            assert [float(v) for v in row[2:]] == [round(want["per_caption"][k][i], DIGITS) for k in keys]
        _bad_input_message(page, ARTIFACTS / f"{name}-bad-input.png", {"#references textarea": "only one line"},
                           "3 caption(s) but 1 line(s) of references")
        page.close()
    finally:
        app["demo"].close()


def test_thumb_space_in_a_browser(browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    app, url = _launch("thumb")
    try:
        page = browser.new_page()
        page.goto(url)
        page.click("#example")
        _wait_for_rows(page, "corpus", "total")
        _wait_for_rows(page, "systems", "model")
        _wait_for_rows(page, "per_caption", "4")
        page.screenshot(path=str(ARTIFACTS / "thumb-example.png"), full_page=True)
        rows = [line.split(",") for line in THUMB_EXAMPLE.splitlines()[1:]]
        want = load_module(str(ROOT / "metrics" / "thumb" / "app.py")).compute(precision=[float(r[0]) for r in rows], recall=[float(r[1]) for r in rows],
                                     fluency=[float(r[2]) for r in rows], conciseness=[float(r[3]) for r in rows],
                                     inclusive=[float(r[4]) for r in rows], systems=[r[5].strip() for r in rows],
                                     bootstrap_samples=0)
        assert _table(page, "corpus")[0][0] == "total"
        assert float(_table(page, "corpus")[0][1]) == round(want["total"], DIGITS)
        shown = [float(row[3]) for row in _table(page, "per_caption")]
        assert shown == [round(t, DIGITS) for t in want["per_caption"]["total"]]
        systems = {row[0]: float(row[4]) for row in _table(page, "systems")}
        assert systems == {k: round(v["total"], DIGITS) for k, v in want["systems"].items()}
        _bad_input_message(page, ARTIFACTS / "thumb-bad-input.png", {"#rows textarea": "5, 5\n4, x"},
                           "Line 2: recall 'x' is not a number")
        page.close()
    finally:
        app["demo"].close()


# -- the image Space (learned_critic), scoring with tiny random critics named by the environment ----------------


def _first_column(page, elem_id: str) -> list[str]:
    return [row[0] for row in _table(page, elem_id)]


def _wait_for_first_column(page, elem_id: str, values: list[str]) -> None:
    """Wait until the first cells of the rows of ``elem_id`` are exactly ``values`` (a new result is drawn)."""
    page.wait_for_function(
        "([id, want]) => { const got = [...document.querySelectorAll('#' + id + ' div[role=row]')]"
        ".map(r => [...r.querySelectorAll('[role=gridcell]')]).filter(c => c.length).map(c => c[0].innerText.trim());"
        " return JSON.stringify(got) === JSON.stringify(want); }", arg=[elem_id, values], timeout=120_000)


def _check_critic_tables(page, want: dict, keys: list[str], captions: list[str], images: list[str]) -> None:
    corpus = _table(page, "corpus")
    assert [row[0] for row in corpus] == keys + [f"{k} vocabulary coverage" for k in keys]
    for key, shown in corpus:
        value = want["coverage"][key.split()[0]] if key.endswith("coverage") else want[key]
        assert float(shown) == round(value, DIGITS), key
    per_caption = _table(page, "per_caption")
    assert len(per_caption) == len(captions)
    for i, row in enumerate(per_caption):
        assert row[:3] == [str(i + 1), images[i], captions[i]]
        assert [float(v) for v in row[3:]] == [round(want["per_caption"][k][i], DIGITS) for k in keys]


def _set_metrics(page, chosen: list[str]) -> None:
    for name in CRITIC_METRICS:
        box = page.get_by_label(name, exact=True)
        if box.is_checked() != (name in chosen):
            box.click()


def test_critic_space_in_a_browser(browser, tiny_critics, tiny_plus, monkeypatch, tmp_path):
    """Example (the bundled photos), an upload of two images in another order, critic_ref without images, and the
    messages for bad input: reference lines, a text file posing as a JPEG, no image for critic; critic_plus ticked
    (a combiner over the tiny critic, with a stand-in sentence encoder)."""
    metrics = list(CRITIC_DEFAULT_METRICS)
    models = {**tiny_critics, "critic_plus_model": tiny_plus}
    for option, variable in CRITIC_MODEL_ENV.items():  # the app reads the critic folders from the environment
        monkeypatch.setenv(variable, models[option])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    photos = [str(p) for p in example_images()]
    app, url = _launch("learned_critic")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(url)
        page.click("#example")
        _wait_for_rows(page, "corpus", "critic_img")
        captions = parse_predictions(CRITIC_EXAMPLE[0])
        _wait_for_rows(page, "per_caption", captions[-1])
        page.screenshot(path=str(ARTIFACTS / "learned_critic-example.png"), full_page=True)
        want = capeval.score(captions, parse_references(CRITIC_EXAMPLE[1], 3), metrics=metrics, images=photos,
                             **tiny_critics)
        _check_critic_tables(page, want, metrics, captions, ["chelsea.jpg", "astronaut.jpg", "coffee.jpg"])

        # two uploaded images, in the other order, with two caption lines: the k-th image is the k-th line's
        page.get_by_label("Clear").first.click()
        page.locator("#images input[type=file]").first.set_input_files([photos[1], photos[0]])
        page.wait_for_function("() => document.querySelectorAll('#images img').length >= 2", timeout=60_000)
        two = ["an astronaut smiling", "a cat"]
        refs = "a woman in a space suit\na striped cat | a tabby cat"
        page.fill("#predictions textarea", "\n".join(two))
        page.fill("#references textarea", refs)
        page.click("#score")
        _wait_for_rows(page, "per_caption", two[0])
        want = capeval.score(two, parse_references(refs, 2), metrics=metrics, images=[photos[1], photos[0]],
                             **tiny_critics)
        page.screenshot(path=str(ARTIFACTS / "learned_critic-upload.png"), full_page=True)
        _check_critic_tables(page, want, metrics, two, ["astronaut.jpg", "chelsea.jpg"])

        # critic_plus, ticked beside critic (it is not ticked at first)
        _set_metrics(page, ["critic", "critic_plus"])
        page.click("#score")
        _wait_for_first_column(page, "corpus", ["critic", "critic_plus", "critic vocabulary coverage",
                                                "critic_plus vocabulary coverage"])
        want = capeval.score(two, parse_references(refs, 2), metrics="critic,critic_plus",
                             images=[photos[1], photos[0]], **models)
        _check_critic_tables(page, want, ["critic", "critic_plus"], two, ["astronaut.jpg", "chelsea.jpg"])
        _set_metrics(page, metrics)

        _bad_input_message(page, ARTIFACTS / "learned_critic-bad-input.png", {"#references textarea": "only one line"},
                           "2 caption(s) but 1 line(s) of references")

        # an unreadable "image": a text file named .jpg, the second of two
        fake = tmp_path / "notes.jpg"
        fake.write_text("not a picture")
        page.get_by_label("Clear").first.click()
        page.locator("#images input[type=file]").first.set_input_files([photos[0], str(fake)])
        page.wait_for_function("() => document.querySelectorAll('#images img').length >= 2", timeout=60_000)
        _bad_input_message(page, ARTIFACTS / "learned_critic-unreadable.png", {"#references textarea": refs},
                           "Image 2 (notes.jpg) is not a readable image")

        # no image: critic refuses and says what to do; critic_ref alone scores without images
        page.get_by_label("Clear").first.click()
        _bad_input_message(page, ARTIFACTS / "learned_critic-no-image.png", {},
                           "critic, critic_img read the image: upload one image per caption line")
        _set_metrics(page, ["critic_ref"])
        page.click("#score")
        _wait_for_first_column(page, "corpus", ["critic_ref", "critic_ref vocabulary coverage"])
        page.screenshot(path=str(ARTIFACTS / "learned_critic-critic-ref.png"), full_page=True)
        want = capeval.score(two, parse_references(refs, 2), metrics="critic_ref", **tiny_critics)
        _check_critic_tables(page, want, ["critic_ref"], two, ["", ""])
        page.close()
    finally:
        app["demo"].close()


def _png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares ``width`` × ``height`` pixels (a decompression bomb's shape)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 10)) + chunk(b"IEND", b""))


def test_critic_space_with_hostile_uploads(browser, tiny_critics, monkeypatch, tmp_path):
    """What a remote visitor may upload: a 20000×1 strip (a few hundred bytes that an unbounded resize turns into
    gigabytes) is scored, with the numbers capeval.score gives for it; a PNG declaring 100000² pixels is refused in
    the visitor's words, naming the upload."""
    from PIL import Image

    for option, variable in CRITIC_MODEL_ENV.items():
        if option in tiny_critics:
            monkeypatch.setenv(variable, tiny_critics[option])
    strip = tmp_path / "strip.png"
    Image.new("RGB", (20000, 1), (200, 30, 30)).save(strip)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png_declaring(100_000, 100_000))
    photo = str(example_images()[0])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    app, url = _launch("learned_critic")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(url)
        _set_metrics(page, ["critic", "critic_img"])
        page.locator("#images input[type=file]").first.set_input_files([str(strip), photo])
        page.wait_for_function("() => document.querySelectorAll('#images img').length >= 2", timeout=60_000)
        two = ["a red line", "a cat on a sofa"]
        refs = "a thin red stripe\na cat lying down"
        page.fill("#predictions textarea", "\n".join(two))
        page.fill("#references textarea", refs)
        page.click("#score")
        _wait_for_rows(page, "per_caption", two[0])
        page.screenshot(path=str(ARTIFACTS / "learned_critic-strip.png"), full_page=True)
        want = capeval.score(two, parse_references(refs, 2), metrics="critic,critic_img", images=[str(strip), photo],
                             **tiny_critics)
        _check_critic_tables(page, want, ["critic", "critic_img"], two, ["strip.png", Path(photo).name])

        page.get_by_label("Clear").first.click()
        page.locator("#images input[type=file]").first.set_input_files([photo, str(bomb)])
        page.wait_for_function("() => document.querySelectorAll('#images img').length >= 2", timeout=60_000)
        _bad_input_message(page, ARTIFACTS / "learned_critic-bomb.png", {},
                           "Image 2 (bomb.png) is larger than Pillow's decompression-bomb limit; downscale it first")
        page.close()
    finally:
        app["demo"].close()


# -- the LCEval Space, scoring with a tiny random network named by the environment and the released layer --------


def test_lceval_space_in_a_browser(browser, tiny_lceval, java, monkeypatch):
    """Example (both scores and the 16 features of each caption), bad input, and the released layer alone."""
    from capeval.lceval import FEATURE_NAMES

    needs("lceval")
    monkeypatch.setenv("CAPEVAL_LCEVAL_MODEL", tiny_lceval)  # the app reads the network folder from the environment
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    app, url = _launch("lceval")
    try:
        page = browser.new_page(viewport={"width": 1600, "height": 1100})
        page.goto(url)
        page.click("#example")
        captions = parse_predictions(LCEVAL_EXAMPLE[0])
        _wait_for_rows(page, "corpus", "lceval_released")
        _wait_for_rows(page, "features", captions[-1])
        page.screenshot(path=str(ARTIFACTS / "lceval-example.png"), full_page=True)
        metrics = list(LCEVAL_METRICS)
        want = capeval.score(captions, parse_references(LCEVAL_EXAMPLE[1], 3), metrics=metrics, lceval_features=True,
                             lceval_model=tiny_lceval)
        corpus = _table(page, "corpus")
        assert [row[0] for row in corpus] == metrics + [f"{k} vocabulary coverage" for k in metrics]
        for key, shown in corpus:
            value = want["coverage"][key.split()[0]] if key.endswith("coverage") else want[key]
            assert float(shown) == round(value, DIGITS), key
        per_caption = _table(page, "per_caption")
        assert len(per_caption) == 3
        for i, row in enumerate(per_caption):
            assert row[:2] == [str(i + 1), captions[i]]
            assert [float(v) for v in row[2:]] == [round(want["per_caption"][k][i], DIGITS) for k in metrics]
        features = _table(page, "features")
        assert len(features) == 3  # both networks read the same features: one row per caption
        for i, row in enumerate(features):
            assert row[:3] == [str(i + 1), captions[i], "lceval, lceval_released"]
            assert [float(v) for v in row[3:]] == [round(want["lceval_features"][i][f], DIGITS) for f in FEATURE_NAMES]

        _bad_input_message(page, ARTIFACTS / "lceval-bad-input.png", {"#references textarea": "only one line"},
                           "3 caption(s) but 1 line(s) of references")

        # the released layer alone, on two typed captions
        two = ["a dog runs across the grass", "a man rides a red bike"]
        refs = "a brown dog running on a lawn | a dog plays in the grass\na man riding a bicycle"
        page.fill("#predictions textarea", "\n".join(two))
        page.fill("#references textarea", refs)
        box = page.get_by_label("lceval", exact=True)
        if box.is_checked():
            box.click()
        page.click("#score")
        _wait_for_first_column(page, "corpus", ["lceval_released", "lceval_released vocabulary coverage"])
        _wait_for_first_column(page, "features", ["1", "2"])
        page.screenshot(path=str(ARTIFACTS / "lceval-released.png"), full_page=True)
        want = capeval.score(two, parse_references(refs, 2), metrics="lceval_released", lceval_released_features=True)
        assert float(_table(page, "corpus")[0][1]) == round(want["lceval_released"], DIGITS)
        assert [row[2] for row in _table(page, "features")] == ["lceval_released"] * 2
        page.close()
    finally:
        app["demo"].close()
