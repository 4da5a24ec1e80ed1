"""The side-by-side pairs: the command on a tiny shape, its targets, its report section and the
independent reproduction script (no timing assertions: structure, positive and finite values)."""

import dataclasses
import json
import math
import pathlib
import runpy
import subprocess
import sys

import pytest

from arena_tf.benchmark import __main__ as cli
from arena_tf.benchmark import machine, pairs, peers, report, targets
from tests.benchmark.test_report import MACHINE, layer_row, results
from tests.one_line import assert_one_error_line

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = [pytest.mark.xdist_group("test_pairs"), pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "side_by_side.py"
TINY = [
    "--length",
    "128",
    "--rounds",
    "2",
    "--calls",
    "1",
    "--warmup",
    "1",
    "--matmul-size",
    "128",
    "--in-process",
    "--runs",
    "1",
]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """pairs.json of full:keras_mha (Keras 3 only) at 128 tokens, batches 1 and 2, both masks."""
    output = tmp_path_factory.mktemp("pairs") / "pairs.json"
    cli.main(
        [
            "pairs",
            "--pairs",
            "full:keras_mha",
            "--batches",
            "1",
            "2",
            *TINY,
            "--output",
            str(output),
        ]
    )
    return output


def positive(value):
    return isinstance(value, float) and math.isfinite(value) and value > 0


def test_pairs_records_ratios_for_every_batch_and_mask(measured):
    found = json.loads(measured.read_text())
    assert found["benchmark"] == "pairs" and positive(found["matmul_rate"]["gflops"])
    assert {"cores", "mhz", "flops_per_cycle", "gflops", "flags"} <= set(found["peak"])
    assert "ABBA / BAAB" in found["order"]
    rows = {(row["batch"], row["mask"]): row for row in found["rows"]}
    assert set(rows) == {(b, m) for b in (1, 2) for m in ("none", "padded")}
    for row in rows.values():
        assert "error" not in row, row.get("error")
        assert len(row["ratios"]) == row["rounds"] == 2 and all(map(positive, row["ratios"]))
        assert row["ratio_min"] <= row["ratio_median"] <= row["ratio_max"]
        assert positive(row["ours_ms"]) and positive(row["peer_ms"])
        assert {"intra_op", "inter_op", "environment"} <= set(row["threads"])
        assert row["load"] >= 0 and row["load_before"] >= 0
        assert row["ours"]["arguments"] == {
            "num_heads": 4,
            "head_dim": 64,
            "max_len": 128,
            "seed": 0,
        }
        assert row["peer"]["class"] == "keras.layers.MultiHeadAttention"
        assert row["peer"]["arguments"]["key_dim"] == 64 and row["peer"]["config"]["num_heads"] == 4
    assert rows[1, "none"]["valid_lengths"] == [128] and rows[1, "padded"]["valid_lengths"] == [96]
    assert rows[2, "padded"]["valid_lengths"] == [128, 96]


def test_runs_pool_their_rounds(tmp_path):
    output = tmp_path / "pairs.json"
    cli.main(
        [
            "pairs",
            "--pairs",
            "full:keras_mha",
            "--batches",
            "1",
            "--masks",
            "none",
            *TINY,
            "--runs",
            "2",
            "--output",
            str(output),
        ]
    )
    (row,) = json.loads(output.read_text())["rows"]
    assert len(row["runs"]) == 2 and len(row["ratios"]) == 2 * row["rounds"]
    assert row["ratio_min"] == min(run["ratio_min"] for run in row["runs"])
    assert row["ratio_max"] == max(run["ratio_max"] for run in row["runs"])


def test_a_peer_without_a_padding_mask_is_recorded_unsupported(tmp_path, monkeypatch, capsys):
    original = peers._keras_mha
    monkeypatch.setattr(
        peers,
        "_keras_mha",
        lambda shape, seed: dataclasses.replace(original(shape, seed), masking=None),
    )
    output = tmp_path / "pairs.json"
    cli.main(
        [
            "pairs",
            "--pairs",
            "full:keras_mha",
            "--batches",
            "1",
            "--masks",
            "padded",
            *TINY,
            "--output",
            str(output),
        ]
    )
    (row,) = json.loads(output.read_text())["rows"]
    assert row["unsupported"] == "keras_mha takes no padding mask" and "ratios" not in row
    assert "unsupported" in capsys.readouterr().out


def test_unknown_pairs_and_missing_peers_are_one_line_errors(monkeypatch, capsys):
    assert cli.main(["pairs", "--pairs", "full:kernel_elu", "--in-process"]) == 2
    assert_one_error_line(capsys.readouterr().err, "full:kernel_elu", "performer:kernel_exp")
    absent = dataclasses.replace(peers.PEERS["kernel_elu"], package="no_such_module")
    monkeypatch.setitem(peers.PEERS, "kernel_elu", absent)
    monkeypatch.setitem(peers.INSTALL, "no_such_module", "pip install it")
    assert cli.main(["pairs", "--pairs", "linear:kernel_elu", "--in-process"]) == 2
    assert_one_error_line(capsys.readouterr().err, "not installed", "pip install it")


def test_model_garden_peer_side_by_side(tmp_path):
    pytest.importorskip("official")
    output = tmp_path / "pairs.json"
    cli.main(
        [
            "pairs",
            "--pairs",
            "linear:kernel_elu",
            "--batches",
            "2",
            "--masks",
            "padded",
            *TINY,
            "--output",
            str(output),
        ]
    )
    (row,) = json.loads(output.read_text())["rows"]
    assert "error" not in row, row.get("error")
    assert positive(row["ratio_median"]) and row["peer"]["arguments"]["feature_transform"] == "elu"


def test_rounds_alternate_which_side_goes_first():
    called = []
    steps = {side: (lambda x, side=side: called.append(side)) for side in pairs.SIDES}
    seconds = pairs.interleaved(steps, None, rounds=2, calls=2)
    assert called == ["ours", "peer", "peer", "ours", "peer", "ours", "ours", "peer"]
    assert [len(each_round) for each_round in seconds["peer"]] == [2, 2]
    assert pairs.padded_lengths(4, 128) == [128, 118, 107, 96]
    assert pairs.padded_lengths(1, 128) == [96]


def pair_row(pair, batch, mask, median, spread=0.1, length=4096):
    ours, peer = pair.rsplit(":", 1)
    return {
        "pair": pair,
        "batch": batch,
        "mask": mask,
        "length": length,
        "rounds": 7,
        "ours": {
            "label": ours,
            "name": ours.split("[")[0],
            "params": {},
            "arguments": {"num_heads": 4, "head_dim": 64, "max_len": length, "seed": 0},
            "masking": "mask= bool [batch, L]",
        },
        "peer": {
            "name": peer,
            "class": f"peer.{peer}",
            "arguments": {"num_heads": 4},
            "masking": "attention_mask",
        },
        "ratios": [median - spread, median, median + spread],
        "ratio_median": median,
        "ratio_min": median - spread,
        "ratio_max": median + spread,
        "ours_ms": 10.0,
        "peer_ms": 10.0 * median,
        "threads": {"intra_op": 0, "inter_op": 0, "environment": {}},
        "load": 1.0,
    }


def hand_made():
    unsupported = {
        **pair_row("local[block_size=64]:block_sparse", 4, "padded", 1.0),
        "unsupported": "takes no padding mask",
    }
    failed = {**pair_row("full:keras_mha", 4, "padded", 1.0), "error": "exit status -9"}
    for row in (unsupported, failed):
        for key in ("ratios", "ratio_median", "ratio_min", "ratio_max", "ours_ms", "peer_ms"):
            del row[key]
    rows = [
        pair_row("performer:kernel_exp", 1, "none", 2.5),
        pair_row("performer:kernel_exp", 4, "padded", 2.2),
        pair_row("linear:kernel_elu", 1, "none", 2.5),
        pair_row("linear:kernel_elu", 4, "padded", 1.8),
        pair_row("bigbird:bigbird_tfm", 1, "none", 3.1),
        pair_row("bigbird:bigbird_tfm", 4, "none", 2.4),
        pair_row("local[block_size=64]:block_sparse", 1, "none", 1.6),
        unsupported,
        pair_row("full:keras_mha", 1, "none", 1.3),
        failed,
    ]
    return {
        "benchmark": "pairs",
        "machine": MACHINE,
        "options": {"matmul_size": 4096},
        "started": "2026-01-01 00:00:00",
        "finished": "2026-01-01 00:20:00",
        "load_start": 0.5,
        "order": "rounds alternate ABBA / BAAB",
        "matmul_rate": {"gflops": 400.0, "size": 4096},
        "peak": {
            "cores": 2,
            "mhz": 2600.0,
            "flags": ["avx2", "avx512f", "fma"],
            "flops_per_cycle": 64,
            "gflops": 332.8,
        },
        "rows": rows,
    }


def test_pair_targets_judge_every_configuration_median():
    judged = {t["target"].split(" >=")[0]: t for t in targets.evaluate(pair_results=hand_made())}
    assert judged["performer"]["met"] is True and judged["performer"]["value"] == 2.2
    assert "batch 4, padded: 2.20x [2.10-2.30]" in judged["performer"]["detail"]
    assert judged["linear"]["met"] is False and judged["linear"]["value"] == 1.8
    assert (
        judged["bigbird"]["met"] is True
        and "aim 3x: reached in 1 of 2" in judged["bigbird"]["detail"]
    )
    assert judged["local[block_size=64]"]["met"] is True
    assert "batch 4, padded: unsupported by the peer" in judged["local[block_size=64]"]["detail"]
    assert judged["full"]["met"] is None and "batch 4, padded: failed" in judged["full"]["detail"]
    shorter = {**hand_made(), "rows": [pair_row("performer:kernel_exp", 1, "none", 9, length=128)]}
    assert all(t["met"] is None for t in targets.evaluate(pair_results=shorter))


def test_report_renders_the_pairs_section(tmp_path):
    (tmp_path / "pairs.json").write_text(json.dumps(hand_made()))
    (tmp_path / "layers.json").write_text(
        json.dumps(
            results(
                "layers",
                [layer_row("full", "layer", 4096, 120, 3000)],
                agreement=[],
                matmul=[{"gflops": 100.0, "size": 2048}],
            )
        )
    )
    output = tmp_path / "efficiency.md"
    cli.main(
        [
            "report",
            "--exact",
            "none.json",
            "--layers",
            str(tmp_path / "layers.json"),
            "--train",
            str(tmp_path / "none.json"),
            "--mixers",
            "--pairs",
            str(tmp_path / "pairs.json"),
            "--notes",
            str(tmp_path / "none.md"),
            "--output",
            str(output),
        ]
    )
    text = output.read_text()
    assert "## Pairs side by side" in text and "### performer vs kernel_exp (4096 tokens)" in text
    assert (
        "| batch | mask | ratio median [min-max] | ours ms | peer ms | rounds x runs | each "
        "run's median |"
    ) in text
    assert "| 4 | padded | 2.20x [2.10-2.30] | 10.0 | 22.0 | 7 x 1 |" in text
    assert "| 4 | padded | unsupported: takes no padding mask |" in text
    assert "`arena_tf.layers.get('performer', num_heads=4, head_dim=64" in text
    assert "2 cores x 2600 MHz x 64 FLOPs/cycle (2 FMA units x 16 floats x 2) = 333" in text
    lines = text.splitlines()
    linear = next(line for line in lines if line.startswith("| linear >= 2x as fast as kernel"))
    assert "**missed**" in linear
    assert "| full >= 1x as fast as keras_mha" in text  # the layer targets stay
    assert report.ratio_cell({"error": "boom"}) == "failed"


def test_lscpu_peak_from_its_fields():
    text = (
        "CPU(s): 8\nCore(s) per socket: 4\nSocket(s): 1\nCPU max MHz: 3000.0000\n"
        "Flags: fpu avx avx2 fma\n"
    )
    peak = machine.physical_peak(machine.parse_lscpu(text))
    assert peak == {
        "cores": 4,
        "mhz": 3000.0,
        "flags": ["avx2", "fma"],
        "flops_per_cycle": 32,
        "gflops": 384.0,
    }
    wide = machine.physical_peak(machine.parse_lscpu(text.replace("avx2", "avx2 avx512f")))
    assert wide["flops_per_cycle"] == 64 and wide["gflops"] == 768.0
    assert machine.physical_peak({"Flags": "sse2", "CPU MHz": "1000"})["gflops"] is None


def widened(path, low, high, tmp_path, name):
    """A copy of the pairs results at `path` with every recorded range set to [low, high]."""
    found = json.loads(path.read_text())
    for row in found["rows"]:
        row.update(ratio_min=low, ratio_max=high)
    copy = tmp_path / name
    copy.write_text(json.dumps(found))
    return copy


def test_side_by_side_reproduces_without_the_benchmark_package(measured, tmp_path):
    wide = widened(measured, 1e-3, 1e3, tmp_path, "wide.json")
    program = (
        "import runpy, sys; main = runpy.run_path(sys.argv[1])['main']; "
        "code = main(['--check', sys.argv[2]]); "
        "assert not [m for m in sys.modules if m.startswith('arena_tf.benchmark')]; "
        "sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(SCRIPT), str(wide)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("full:keras_mha")]
    assert len(lines) == 4 and all("within" in line for line in lines)


def test_side_by_side_check_fails_outside_the_recorded_range(measured, tmp_path, capsys):
    impossible = widened(measured, 1e3, 1e3, tmp_path, "impossible.json")
    found = json.loads(impossible.read_text())
    found["rows"] = found["rows"][:1]
    impossible.write_text(json.dumps(found))
    main = runpy.run_path(str(SCRIPT))["main"]
    assert main(["--check", str(impossible)]) == 1
    assert "OUTSIDE" in capsys.readouterr().out
    assert main(["--check", str(tmp_path / "absent.json")]) == 2
    assert_one_error_line(capsys.readouterr().err, "pairs results")
