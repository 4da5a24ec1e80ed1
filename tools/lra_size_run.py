"""An untrained LRA-size ListOps run directory, for timing the serving runtimes at the paper's size.

    python tools/lra_size_run.py DEMO_RUN_DIR OUT_RUN_DIR [--mechanism linformer] [--max-len 2000]

Writes OUT_RUN_DIR/model.keras and config.yaml: the classifier of configs/tasks/listops.yaml (LRA's
ListOps model: 6 layers, width 512, 8 heads, MLP 2048) with `mechanism`'s configs/models settings,
at `max_len` tokens, its weights as initialised (accuracy is chance: this run is for speed and
memory, never for accuracy). The task section is the demo run's (its generated ListOps rows, padded
to `max_len`), so the serving bench has rows to send. Runs under any Keras backend.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from arena_tf import cli  # noqa: E402 (after the path above)

cli.prepare_process()  # before TensorFlow and Keras are imported

import yaml  # noqa: E402

from arena_tf import files  # noqa: E402
from arena_tf.config import ModelConfig, load_experiment, read_yaml  # noqa: E402
from arena_tf.models import build_classifier  # noqa: E402


def lra_size_config(demo, mechanism, max_len):
    """The demo's config.yaml sections with the LRA ListOps model of `mechanism` at `max_len`."""
    lra = load_experiment("listops", mechanism).model.to_dict()
    derived = {
        key: demo["model"][key]
        for key in ("vocab_size", "num_classes", "padding_id")
        if key in demo["model"]
    }
    model = {**lra, **derived, "max_len": max_len, "dropout": 0.0, "attention_dropout": 0.0}
    return {**demo, "task": {**demo["task"], "max_len": max_len}, "model": model}


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python tools/lra_size_run.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "demo_run_dir",
        metavar="DEMO_RUN_DIR",
        help="a run directory of python -m arena_tf.train (its config.yaml)",
    )
    parser.add_argument("out_run_dir", metavar="OUT_RUN_DIR", help="the run directory to write")
    parser.add_argument("--mechanism", default="linformer")
    parser.add_argument("--max-len", type=int, default=2000)
    return parser.parse_args(argv)


def demo_config(run_dir):
    """The config.yaml sections of the demo run; UsageError where it has none."""
    path = pathlib.Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise cli.UsageError(
            f"DEMO_RUN_DIR {run_dir} has no config.yaml",
            "a run directory written by python -m arena_tf.train",
            "train one first, e.g. python -m arena_tf.train --task=listops "
            "--preset=tiny --run-dir=runs/demo",
        )
    return read_yaml(path)


def write_run(args):
    """OUT_RUN_DIR's model.keras and config.yaml; its one-line summary printed."""
    config = lra_size_config(demo_config(args.demo_run_dir), args.mechanism, args.max_len)
    out = cli.output_dir(args.out_run_dir, "OUT_RUN_DIR")
    model = build_classifier(ModelConfig(**config["model"]))
    model.save(out / "model.keras")
    files.write_text(out / "config.yaml", yaml.safe_dump(config, sort_keys=False))
    print(
        f"{out}: {config['model']['num_layers']} layers of {config['model']['emb_dim']}, "
        f"{args.max_len} tokens, {model.count_params():,} parameters (untrained)"
    )


def main(argv=None):
    """Command line: write an untrained LRA-size ListOps run directory.

    Args:
        argv: DEMO_RUN_DIR OUT_RUN_DIR [--mechanism NAME] [--max-len N] (default: sys.argv[1:]).

    Exit status:
        0 when the run directory is written; 2 and one `error: ...` line on stderr for a user's
            mistake; 1 when building or saving failed (`--debug`: the traceback).

    Example:
        python tools/lra_size_run.py runs/listops-linformer runs/listops-linformer-lra

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    args = parse_args(argv)
    return cli.run_main(lambda: write_run(args), debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
