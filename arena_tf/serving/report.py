"""Bench reports: JSON lines, CSV and a Markdown table, each written atomically.

    report.write_all(rows, "bench/")   # bench/results.jsonl, results.csv, results.md
    python -m serving.report DIR       # DIR's results.md, results.csv and plots, from its
                                       # results.jsonl alone

Rows are flat dicts (see serving/bench.py); nested values (server trials) are JSON in the CSV.
Every row is listed with its status (ok, unsupported, failed, invalid); only "ok" rows enter the
throughput ratio table (an invalid row's outputs were not predictions: nothing to compare).
"""

import csv
import io
import json
import pathlib
import statistics
import sys

from arena_tf import cli
from arena_tf.files import write_text
from arena_tf.markdown import table
from arena_tf.serving import plots, results_dir

MIB = 1 << 20

# (heading, key, format) of the Markdown table; None values print as "-".
TABLE = (
    ("model", "model", "{}"),
    ("runtime", "runtime", "{}"),
    ("precision", "precision", "{}"),
    ("scenario", "scenario", "{}"),
    ("status", "status", "{}"),
    ("accuracy", "accuracy", "{:.4f}"),
    ("throughput (inst/s)", "throughput", "{:.1f}"),
    (
        "latency p50 / p99 (ms)",
        ("request_latency_p50_ms", "request_latency_p99_ms"),
        "{:.2f} / {:.2f}",
    ),
    (
        "early-stopping p90 / p99 (ms)",
        ("request_latency_p90_early_ms", "request_latency_p99_early_ms"),
        "{:.2f} / {:.2f}",
    ),
    ("in-model p50 (ms)", "model_latency_p50_ms", "{:.2f}"),
    (
        "mean latency / bare loop (end to end, in-model)",
        ("end_to_end_over_bare_loop", "in_model_over_bare_loop"),
        "{:.3f}, {:.3f}",
    ),
    ("server max rate (/s)", "server_max_rate", "{:.1f}"),
    ("peak RSS (MiB)", "peak_rss_mib", "{:.0f}"),
    ("peak GPU (MiB)", "peak_gpu_mib", "{:.0f}"),
    ("energy (W.h)", "energy_wh", "{:.3g}"),
    ("energy source", "energy_source", "{}"),
    ("fitness", "fitness", "{:.3g}"),
    ("note", "note", "{}"),
)


# (heading, (runtime, precision) over (runtime, precision)) of the throughput ratio table.
RATIOS = (
    ("ONNX Runtime / TensorFlow (FP32)", ("onnxruntime", "fp32"), ("tf", "fp32")),
    ("TensorFlow FP16 / FP32", ("tf", "fp16"), ("tf", "fp32")),
    ("TensorFlow BF16 / FP32", ("tf", "bf16"), ("tf", "fp32")),
    ("ONNX Runtime FP16 / FP32", ("onnxruntime", "fp16"), ("onnxruntime", "fp32")),
    ("OpenVINO / ONNX Runtime (FP32)", ("openvino", "fp32"), ("onnxruntime", "fp32")),
    ("OpenVINO / TensorFlow (FP32)", ("openvino", "fp32"), ("tf", "fp32")),
    ("XLA / ONNX Runtime (FP32)", ("xla", "fp32"), ("onnxruntime", "fp32")),
    ("XLA FP16 / FP32", ("xla", "fp16"), ("xla", "fp32")),
    ("XLA BF16 / FP32", ("xla", "bf16"), ("xla", "fp32")),
)


def cell(row, key, fmt):
    """One formatted table cell; '-' when a value is missing."""
    keys = key if isinstance(key, tuple) else (key,)
    values = [derived(row, k) for k in keys]
    if any(v is None or v == "" for v in values):
        return "-"
    return fmt.format(*values).replace("|", "\\|").replace("\n", " ")


def derived(row, key):
    """A row value, with MiB views of byte counts."""
    if key.endswith("_mib"):
        value = row.get(key[: -len("_mib")] + "_bytes")
        return None if value is None else value / MIB
    return row.get(key)


def throughput_ratios(rows):
    """{(model, scenario): [ratio or None per RATIOS]} from the rows that ran; only pairs with at
    least one ratio."""
    measured = {
        (r["model"], r["scenario"], r["runtime"], r["precision"]): r["throughput"]
        for r in rows
        if r.get("status") == "ok" and r.get("throughput")
    }
    ratios = {}
    for model, scenario in dict.fromkeys((m, s) for m, s, _, _ in measured):
        values = [
            _ratio(measured.get((model, scenario, *top)), measured.get((model, scenario, *bottom)))
            for _, top, bottom in RATIOS
        ]
        if any(value is not None for value in values):
            ratios[(model, scenario)] = values
    return ratios


def _ratio(top, bottom):
    return top / bottom if top and bottom else None


def geometric_mean(values):
    values = [v for v in values if v]
    return statistics.geometric_mean(values) if values else None


def ratio_lines(rows):
    """The throughput ratio table: per model and scenario, then the geometric mean per scenario."""
    ratios = throughput_ratios(rows)
    if not ratios:
        return []
    body = [
        [model, scenario, *("-" if v is None else f"{v:.2f}x" for v in values)]
        for (model, scenario), values in [*ratios.items(), *mean_ratios(ratios)]
    ]
    return [
        "",
        "Throughput ratios (instances per second; above 1: the first is faster):",
        "",
        table(["model", "scenario", *(h for h, _, _ in RATIOS)], body),
    ]


def mean_ratios(ratios):
    """[(("all models", scenario), geometric mean per RATIOS)] of `throughput_ratios`' result; none
    for a single model (its own rows say the same)."""
    if len({model for model, _ in ratios}) < 2:
        return []
    scenarios = dict.fromkeys(scenario for _, scenario in ratios)
    return [
        (
            ("all models", s),
            [
                geometric_mean([v[i] for (_, t), v in ratios.items() if t == s])
                for i in range(len(RATIOS))
            ],
        )
        for s in scenarios
    ]


def markdown(rows, notes=()):
    """A Markdown table of the rows' headline fields, the throughput ratios between runtimes and
    precisions, then one bullet per note."""
    lines = [
        table([h for h, _, _ in TABLE], [[cell(row, k, f) for _, k, f in TABLE] for row in rows])
    ]
    lines += ratio_lines(rows)
    lines += [""] + [f"- {note}" for note in notes]
    return "\n".join(lines).rstrip() + "\n"


def notes(rows):
    """The bullets under the table, from the rows alone: each model's instances, the energy
    source, the machine and its load, the device and what the latencies mean."""
    sources = dict.fromkeys(
        f"instances of {r['model']}: {r['instances']}" for r in rows if r.get("instances")
    )
    energy = dict.fromkeys(energy_note(r) for r in rows if "energy_source" in r)
    return [*sources, *energy, *machine_notes(rows), *device_notes(rows)]


def energy_note(row):
    """'energy: <source> (<note>)'; the note alone where it names the source already (an
    estimate's note reads 'estimated by <source>, ...')."""
    source, note = row["energy_source"] or "none", row.get("energy_note")
    if not note:
        return f"energy: {source}"
    if note.startswith(f"estimated by {source.removesuffix(' (estimated)')}"):
        return f"energy: {note}"
    return f"energy: {source} ({note})"


def machine_notes(rows):
    """One line per CPU the rows ran on, with the range of load averages as its rows started."""
    lines = []
    for cpu in dict.fromkeys(r["cpu"] for r in rows if r.get("cpu")):
        mine = [r for r in rows if r.get("cpu") == cpu]
        loads = [r["load_average"] for r in mine if r.get("load_average") is not None]
        load = (
            f"; 1-minute load average {min(loads):.2f} to {max(loads):.2f} as its rows started"
            if loads
            else ""
        )
        lines.append(f"machine: {cpu}, {mine[0].get('cores')} cores{load} ({len(mine)} rows)")
    return lines


def device_notes(rows):
    devices = ", ".join(dict.fromkeys(str(r.get("device")) for r in rows if r.get("device")))
    if not devices:
        return []
    return [
        f"device: {devices}; latency is end to end across Pentathlon's stdio protocol; "
        "in-model latency is what the submission reports on its side channel "
        "(serving.submission: each model call, tokenizing excluded); time, latency (s per "
        "batch), throughput (instances/s) and throughput_words (output words/s) are "
        "Pentathlon's metrics"
    ]


SUMMARY_SECTION = "serving-summary"  # the markers of the summary in the serving guide (make docs)


def summary(rows):
    """The serving guide's summary of a bench run: per model, runtime and precision that ran, the
    headline of each scenario; then the throughput ratios, whether the FP32 accuracies agree, the
    latency ratio of XLA over ONNX Runtime, what did not run and the machine the rows ran on."""
    configs = {}
    for row in rows:
        configs.setdefault((row["model"], row["runtime"], row["precision"]), {})[
            row["scenario"]
        ] = row
    body = [
        summary_cells(key, by_scenario)
        for key, by_scenario in configs.items()
        if any(r.get("status") == "ok" for r in by_scenario.values())
    ]
    header = [
        "model",
        "runtime",
        "precision",
        "fixed_batch accuracy",
        "fixed_batch (inst/s)",
        "offline (inst/s)",
        "single_stream p50 end to end / in-model (ms)",
        "server max rate (/s)",
        "peak RSS (MiB)",
    ]
    lines = [table(header, body), *ratio_lines(rows), ""]
    lines += [
        f"- {note}"
        for note in [
            *accuracy_notes(rows),
            *p50_ratios(rows),
            *not_run_notes(rows),
            *machine_notes(rows),
        ]
    ]
    return "\n".join(lines).rstrip()


def p50_ratios(rows, top="xla", bottom="onnxruntime"):
    """Per model, `top`'s single-stream p50 over `bottom`'s in FP32, end to end and in-model."""
    p50 = {
        (r["model"], r["runtime"]): r
        for r in rows
        if r.get("status") == "ok" and r["scenario"] == "single_stream" and r["precision"] == "fp32"
    }
    lines = []
    for model in dict.fromkeys(m for m, _ in p50):
        a, b = p50.get((model, top)) or {}, p50.get((model, bottom)) or {}
        ratios = [
            _ratio(a.get(k), b.get(k)) for k in ("request_latency_p50_ms", "model_latency_p50_ms")
        ]
        words = " and ".join(
            f"{v:.2f}x {where}" for v, where in zip(ratios, ("end to end", "in-model")) if v
        )
        if words:  # no line where neither latency was measured
            lines.append(f"{model}: single_stream p50 of {top} over {bottom} (FP32): {words}")
    return lines


def accuracy_notes(rows):
    """Per model, the FP32 fixed_batch accuracy of each runtime that ran it; one value where they
    agree."""
    accuracy = {}
    for r in rows:
        if (
            r.get("status") == "ok"
            and r["scenario"] == "fixed_batch"
            and r["precision"] == "fp32"
            and r.get("accuracy") is not None
        ):
            accuracy.setdefault(r["model"], {})[r["runtime"]] = f"{r['accuracy']:.4f}"
    lines = []
    for model, by_runtime in accuracy.items():
        values = set(by_runtime.values())
        words = (
            f"{values.pop()} in every runtime ({', '.join(by_runtime)})"
            if len(values) == 1 and len(by_runtime) > 1
            else ", ".join(f"{runtime} {value}" for runtime, value in by_runtime.items())
        )
        lines.append(f"{model}: fixed_batch accuracy in FP32: {words}")
    return lines


def not_run_notes(rows):
    """The configurations without an ok row, with their rows' statuses (results.md's note column
    says why)."""
    statuses = {}
    for r in rows:
        statuses.setdefault((r["model"], r["runtime"], r["precision"]), set()).add(r["status"])
    missing = [
        f"{' '.join(config)} ({', '.join(sorted(found))})"
        for config, found in statuses.items()
        if "ok" not in found
    ]
    return (
        [f"no ok row (the note column of results.md says why): {'; '.join(missing)}"]
        if missing
        else []
    )


def summary_cells(key, by_scenario):
    """One summary line: the config, then each scenario's headline ('-' where it did not run)."""

    def field(scenario, name, fmt):
        return cell(by_scenario.get(scenario) or {}, name, fmt)

    latency = field("single_stream", "request_latency_p50_ms", "{:.2f}")
    if latency != "-":
        latency += " / " + field("single_stream", "model_latency_p50_ms", "{:.2f}")
    memory = [
        r["peak_rss_bytes"] / MIB
        for r in by_scenario.values()
        if r.get("status") == "ok" and r.get("peak_rss_bytes")
    ]
    return [
        *key,
        field("fixed_batch", "accuracy", "{:.4f}"),
        field("fixed_batch", "throughput", "{:.1f}"),
        field("offline", "throughput", "{:.1f}"),
        latency,
        field("server", "server_max_rate", "{:.1f}"),
        f"{min(memory):.0f}-{max(memory):.0f}" if memory else "-",
    ]


def json_lines(rows):
    return "".join(json.dumps(row, sort_keys=False, default=str) + "\n" for row in rows)


def columns(rows):
    """Every key of every row, in order of first appearance."""
    return list(dict.fromkeys(key for row in rows for key in row))


def csv_text(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns(rows), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in row.items()}
        )
    return out.getvalue()


def write_all(rows, out_dir, notes=()):
    """results.jsonl, results.csv and results.md in `out_dir`, each replaced atomically."""
    out_dir = pathlib.Path(out_dir)
    write_text(out_dir / "results.jsonl", json_lines(rows))
    write_text(out_dir / "results.csv", csv_text(rows))
    write_text(out_dir / "results.md", markdown(rows, notes))
    return [out_dir / name for name in ("results.jsonl", "results.csv", "results.md")]


# The keys of the columns formatted as numbers: a row's value there is a number or missing.
NUMERIC_KEYS = {
    key
    for _, keys, fmt in TABLE
    if "{:" in fmt
    for key in (keys if isinstance(keys, tuple) else (keys,))
}


def check_numbers(rows, path, fix):
    """UsageError naming the first row of `path` holding something other than a number (or null)
    where the report prints one; `fix` is the advice."""
    for row in rows:
        for key in sorted(NUMERIC_KEYS & row.keys()):
            value = row[key]
            if value is not None and not (
                isinstance(value, (int, float)) and not isinstance(value, bool)
            ):
                where = "/".join(str(row[k]) for k in ("model", "runtime", "precision", "scenario"))
                raise cli.UsageError(
                    f"{path}: the row of {where} holds {key} {value!r}",
                    f"a number (or null) for {key}, as serving.bench writes",
                    fix,
                )


def read_rows(out_dir):
    """The rows of `out_dir`/results.jsonl (UsageError for a line that is not a bench row, or a
    row holding something other than a number where the report prints one)."""
    path = pathlib.Path(out_dir) / results_dir.RESULTS
    fix = f"fix or delete that line of {results_dir.RESULTS}"
    rows = results_dir.read_rows(path, fix=fix)
    if not rows:  # a report of nothing would replace the one there
        raise cli.UsageError(
            f"{path} holds no rows",
            "one JSON row a line, as serving.bench writes",
            "pass the --out directory of a bench run that measured",
        )
    check_numbers(rows, path, fix)
    return rows


def regenerated(out_dir):
    """{path: text} of the results.md and results.csv that `out_dir`'s results.jsonl makes
    (plots not drawn)."""
    out_dir, rows = pathlib.Path(out_dir), read_rows(out_dir)
    return {
        out_dir / "results.md": markdown(rows, notes(rows) + plots.notes(rows)),
        out_dir / "results.csv": csv_text(rows),
    }


def draw_plots(out_dir):
    """The charts of `out_dir`, drawn from its results.jsonl; their paths."""
    paths, _ = plots.write_all(read_rows(out_dir), pathlib.Path(out_dir))
    return paths


def regenerate(out_dir):
    """results.md, results.csv and the plots of `out_dir`, rewritten from its results.jsonl."""
    reports = regenerated(out_dir)
    for path, text in reports.items():
        write_text(path, text)
    return [*reports, *draw_plots(out_dir)]


def main(argv=None):
    """Command line: rewrite a bench directory's report and plots from its results.jsonl.

    Args:
        argv: the bench directory DIR and --debug (default: sys.argv[1:]).

    Exit status:
        0 once the report and charts are rewritten; 2 and one `error: ...` line on stderr when
            DIR holds no results.jsonl of serving.bench.

    Example:
        python -m serving.report docs/results/serving

    References:
        Peng et al., 2023, "Efficiency Pentathlon: A Standardized Arena for Efficiency
            Evaluation", arXiv:2307.09701; github.com/allenai/efficiency-pentathlon.
    """
    parser = cli.ArgumentParser(
        prog="python -m serving.report", description=main.__doc__.splitlines()[0]
    )
    parser.add_argument("out_dir", metavar="DIR", help="a serving.bench --out directory")
    args = parser.parse_args(argv)

    def body():
        source = pathlib.Path(args.out_dir) / results_dir.RESULTS
        if not source.is_file():
            raise cli.UsageError(
                f"{source} does not exist",
                "a directory where serving.bench wrote results.jsonl",
                "pass the --out directory of a bench run",
            )
        for path in regenerate(args.out_dir):
            print(f"wrote {path}")
        return 0

    return cli.run_main(body, debug=args.debug)


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
