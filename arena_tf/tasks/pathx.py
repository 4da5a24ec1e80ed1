"""Path-X: Pathfinder at 128 x 128 pixels, 16384 tokens, "hard" (contour length 14).

The same task, reader and generator as `pathfinder` (see arena_tf/tasks/pathfinder.py) with the
Path-X settings: the release layout `pathfinder128/curv_contour_length_14/`, pixels flattened
row-major to 16384 tokens, and generator parameters paddle length 5, thickness 1.5, gaps 2-3,
marker radius 3, continuity 1.8, seed distance 20, 35 // 4 distractors.

Generated size: 50K images by default (40K / 5K / 5K), a quarter of the LRA release's 200K, since
every epoch reads and attends over 16384 tokens per image; pass `num_examples=200_000` for the
release's size (about as fast per image to generate as Pathfinder-32).

    task = arena_tf.tasks.get("pathx")
    pixels, label = next(iter(task.load_split("test")))   # int32 [16384] in 0..255, int32 0 / 1
"""

from arena_tf.generators import pathfinder as generator
from arena_tf.tasks import register
from arena_tf.tasks.pathfinder import Pathfinder


@register
class PathX(Pathfinder):
    """Path-X: Pathfinder 128 x 128 from the LRA release layout, or generated (50K by default)."""

    name = "pathx"
    max_len = 128 * 128
    generator_config = generator.PATHX128
    default_num_examples = 50_000
