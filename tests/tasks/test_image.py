"""Image (CIFAR-10 grayscale): pixels over mocked TFDS, the 90/10 split, no padding, previews."""

import numpy as np
import pytest
from PIL import Image as PILImage

import arena_tf.tasks as tasks
from tests.tasks.mock_tfds import mock_data_splits, split_mock

SPLIT_CODES = {"train[:90%]": 10, "train[90%:]": 20, "test": 30}


def coded_images(spec):
    """Two images per split: every pixel the split's code; then black and white halves."""
    first = np.full((32, 32, 3), SPLIT_CODES[spec], np.uint8)
    second = np.zeros((32, 32, 3), np.uint8)
    second[16:] = 255
    return {"image": np.stack([first, second]), "label": np.array([3, 9])}


def test_image_pipeline_over_tfds_mock_data_gives_grayscale_pixels_without_padding():
    task = tasks.get("image")
    for examples in mock_data_splits(task, num_examples=5).values():
        assert len(examples) == 5
        for pixels, label in examples:
            assert 0 <= pixels.min() and pixels.max() <= 255 and 0 <= label < 10
    assert task.max_len == 1024 and task.padding_id is None and task.vocab_size == 256


def test_grayscale_uses_the_lra_weights_row_major():
    rgb = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    want = rgb.astype(float) @ [0.2989, 0.5870, 0.1140]
    with split_mock(lambda spec: {"image": rgb[None], "label": np.array([1])}):
        pixels, _ = next(iter(tasks.get("image").load_split("test")))
    got = pixels.numpy().reshape(32, 32)
    assert np.abs(got - want).max() <= 1  # up to rounding; a transposed image would be far off


def test_image_splits_are_first_90_percent_last_10_percent_and_test():
    with split_mock(coded_images) as requested:
        task = tasks.get("image")
        data = {split: list(task.load_split(split).as_numpy_iterator()) for split in tasks.SPLITS}
    assert requested == ["train[:90%]", "train[90%:]", "test"]
    for split, code in zip(tasks.SPLITS, SPLIT_CODES.values()):
        (first, _), (halves, label) = data[split]
        assert (first == code).all() and label == 9
        # Black pixels stay real tokens (0), not padding; row-major: top half black, bottom white.
        assert not halves[:512].any() and (halves[512:] == 255).all()


def test_image_preview_writes_pngs(tmp_path):
    with split_mock(coded_images):
        lines = tasks.get("image").preview(tmp_path, count=2)
    assert len(lines) == 2 and "label 9 (truck)" in lines[1]
    picture = np.asarray(PILImage.open(tmp_path / "image_train_1.png"))
    assert picture.shape == (128, 128) and picture[0, 0] == 0 and picture[-1, -1] == 255


def test_image_rejects_another_length():
    with pytest.raises(ValueError, match="max_len 512 is invalid; expected max_len 1024"):
        tasks.get("image", max_len=512)


def test_image_missing_data_says_where_it_looked_and_how_to_get_it(tmp_path):
    with pytest.raises(tasks.DataNotFoundError) as caught:
        tasks.get("image", data_dir=tmp_path).prepare()
    message = str(caught.value)
    for part in ("cifar10", str(tmp_path), "downloading is off", "prepare --task=image"):
        assert part in message
