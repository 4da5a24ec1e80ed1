"""An untrained LRA-size ListOps run directory, for timing the serving runtimes at the paper's size.

    python tools/lra_size_run.py DEMO_RUN_DIR OUT_RUN_DIR [--mechanism linformer] [--max-len 2000]

Writes OUT_RUN_DIR/model.keras and config.yaml: the classifier of configs/tasks/listops.yaml (LRA's
ListOps model: 6 layers, width 512, 8 heads, MLP 2048) with `mechanism`'s configs/models settings,
at `max_len` tokens, its weights as initialised (accuracy is chance: this run is for speed and
memory, never for accuracy). The task section is the demo run's (its generated ListOps rows, padded
to `max_len`), so the serving bench has rows to send. Runs under any Keras backend.
"""

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from arena_tf.config import ModelConfig, load_experiment, read_yaml  # noqa: E402
from arena_tf.models import build_classifier  # noqa: E402


def lra_size_config(demo, mechanism, max_len):
    """The demo's config.yaml sections with the LRA ListOps model of `mechanism` at `max_len`."""
    lra = load_experiment("listops", mechanism).model.to_dict()
    derived = {key: demo["model"][key] for key in ("vocab_size", "num_classes", "padding_id")
               if key in demo["model"]}
    model = {**lra, **derived, "max_len": max_len, "dropout": 0.0, "attention_dropout": 0.0}
    return {**demo, "task": {**demo["task"], "max_len": max_len}, "model": model}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("demo_run_dir")
    parser.add_argument("out_run_dir")
    parser.add_argument("--mechanism", default="linformer")
    parser.add_argument("--max-len", type=int, default=2000)
    args = parser.parse_args(argv)
    config = lra_size_config(read_yaml(pathlib.Path(args.demo_run_dir) / "config.yaml"),
                             args.mechanism, args.max_len)
    out = pathlib.Path(args.out_run_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = build_classifier(ModelConfig(**config["model"]))
    model.save(out / "model.keras")
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    print(f"{out}: {config['model']['num_layers']} layers of {config['model']['emb_dim']}, "
          f"{args.max_len} tokens, {model.count_params():,} parameters (untrained)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
