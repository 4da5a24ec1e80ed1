"""arena_tf: Long Range Arena's efficient Transformers for TensorFlow / Keras 3."""

from setuptools import find_packages, setup

from arena_tf.commands import CONSOLE_SCRIPTS  # standard library only: importable while building

# Ranges known to work together (checked in fresh virtualenvs; exact versions in constraints.txt).
# The base install is backend-neutral: Keras, the configs, the tasks' generators and NumPy batches
# (grain), TensorBoard's event files and the plots. A backend comes with an extra: `.[tf]` (what
# `make run` and `make test` install, with everything export and serving need) or `.[jax]`.
CORE = [
    "keras>=3.10,<4",
    "tensorboard>=2.20,<2.21",  # its event writer and reader work without TensorFlow
    "grain>=0.2.18,<0.3",  # the tasks' backend-neutral batches (arena_tf/tasks/batches.py)
    "numpy>=1.26,<3",
    "pyyaml>=6,<7",
    "pillow>=10",
    "matplotlib>=3.8,<4",  # plots of the analysis, benchmark and serving reports
]

TF = [
    "tensorflow>=2.20,<2.21",
    "tensorflow-datasets>=4.9,<5",
    "onnx>=1.17,<2",
    "tf2onnx>=1.17,<2",
    "onnxconverter-common>=1.16,<2",
    "onnxruntime>=1.20,<2",
]

EXTRAS = {
    "tf": TF,
    # Training under KERAS_BACKEND=jax without TensorFlow (CPU wheels; a GPU adds its CUDA plugin).
    "jax": ["jax>=0.10,<0.11", "jaxlib>=0.10,<0.11"],
    # onnxruntime-gpu *replaces* onnxruntime: uninstall onnxruntime first (see README).
    "gpu": ["tensorflow[and-cuda]>=2.20,<2.21", "onnxruntime-gpu>=1.20,<2"],
    # The TF Model Garden's attention layers, measured side by side with ours.
    "peers": ["tf-models-official>=2.20,<2.21"],
    # The serving bench's MLPerf LoadGen cross-check, energy estimate and GPU memory / energy.
    "serving": ["mlcommons-loadgen>=6,<7", "codecarbon>=3,<4", "nvidia-ml-py>=12"],
    # The third serving runtime and its exporter (export/to_openvino.py); CPU.
    "openvino": ["openvino>=2026.4,<2027"],
    "dev": ["pytest>=8", "pytest-xdist>=3", "ruff", "hypothesis>=6"],
}

setup(
    name="arena_tf",
    version="0.1.0",
    description="Efficient Transformers of Long Range Arena in TensorFlow / Keras 3",
    # arena_tf only: export/ and serving/ hold the commands as a checkout spells them.
    packages=find_packages(include=["arena_tf", "arena_tf.*"]),
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
    python_requires=">=3.10",
    install_requires=CORE,
    extras_require=EXTRAS,
)
