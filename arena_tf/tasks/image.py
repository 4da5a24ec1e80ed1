"""Image: CIFAR-10 classification from the 1024 grayscale pixels of each image, row by row.

Data: TFDS `cifar10`, from a prepared TFDS directory (`data_dir`, else TFDS's own) or downloaded
where the machine is online. Splits: train = the first 90% of train (45K), validation = the last
10% (5K), test = test (10K).

Encoding: `tf.image.rgb_to_grayscale` on the uint8 image (weights 0.2989 / 0.5870 / 0.1140, as the
LRA code), values 0..255 flattened row-major to 1024 tokens. Pixels are their own vocabulary of 256
with no padding id (`padding_id = None`): the reference code treated 0 as padding and so masked
black pixels, a bug not copied here.

Rows: `{"input": [1024 grayscale pixels 0..255], "target": "0".."9"}`, the pixels as load_split
gives them (the conversion to grayscale is part of the row, not of the submission).

    task = arena_tf.tasks.get("image")
    pixels, label = next(iter(task.load_split("test")))   # int32 [1024] in 0..255, int32 0..9
"""

from arena_tf.tasks import register, sources

SIDE = 32
CLASS_NAMES = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)  # fmt: skip


@register
class Image(sources.PixelRows, sources.TfdsTask):
    """CIFAR-10 as 1024 grayscale pixel tokens, no padding."""

    name = "image"
    num_classes = 10
    vocab_size = 256
    max_len = SIDE * SIDE
    num_inputs = 1
    padding_id = None

    tfds_name = "cifar10"
    tfds_splits = {"train": "train[:90%]", "validation": "train[90%:]", "test": "test"}
    download_host = ("www.cs.toronto.edu", 443)

    def __init__(self, data_dir=None, max_len=None, seed=0, download=None):
        super().__init__(data_dir=data_dir, max_len=max_len, seed=seed, download=download)
        sources.require_max_len(self, SIDE * SIDE, "32 x 32 pixels")

    def encode(self, image, label):
        import tensorflow as tf

        gray = tf.image.rgb_to_grayscale(image)
        pixels = tf.reshape(tf.cast(gray, tf.int32), [SIDE * SIDE])
        return pixels, tf.cast(label, tf.int32)

    def preview(self, out_dir, count=3):
        """Save a few training images as PNGs (4x enlarged) in `out_dir`; one line per image."""
        lines = []
        for index, (pixels, label) in enumerate(sources.take_examples(self, "train", count)):
            path = sources.save_png(
                f"{out_dir}/image_train_{index}.png", pixels.reshape(SIDE, SIDE).astype("uint8")
            )
            lines.append(f"train[{index}] label {label} ({CLASS_NAMES[label]}): {path}")
        return lines
