"""The report: docs/results/reproduction/report.md, a learning-curve PNG per suite beside it and
the README's summary, generated from results.json alone (and the runs carried in paused/, shown by
their step). Nothing here runs by itself: `python -m arena_tf.reproduce report` writes the report
and `make docs` (tools/regenerate_docs.py) the README's summary.

Per suite and task: each mechanism's mean and spread over seeds beside the paper's number, the
majority class and the target's verdict; a mechanism without a row is shown as missing, never
estimated. Then every run with its command, and each mechanism's attempts in several suites side
by side with the settings in which they differ.
"""

import pathlib
import shlex
import statistics

from arena_tf import files, plot_style
from arena_tf.markdown import replace_section, table
from arena_tf.reproduce import paused_runs, reruns
from arena_tf.reproduce.results import RESULTS, TRAIN_WINDOWS, command_of, read_results
from arena_tf.reproduce.suites import BOOKKEEPING, SUITES, load_suite, plan, suite_paths

REPORT = RESULTS.parent / "report.md"
# `python -m arena_tf.analysis listops-baselines data/listops --out ...`: what rules reading a tree
# only so far score on the generated ListOps data's test split.
LISTOPS_RULES = RESULTS.parent / "listops-baselines.json"
# The rule levels drawn beside every ListOps row: the root operator alone, the root over its
# direct children (where the state-space papers' ListOps numbers are).
SHOWN_LEVELS = ("0", "1")
README_SUITES = ("cpu-listops", "cpu-pathfinder", "pathfinder-intermediate")  # the README's summary


def spread(values):
    """'37.1' for one value, '36.8 ± 0.4 (3 seeds)' (mean ± sample standard deviation) for more."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.1f}"
    return f"{mean:.1f} ± {statistics.stdev(values):.1f} ({len(values)} seeds)"


def time_cell(row):
    """The report's training time of a row: minutes; where the whole run's time is unknown (a run
    resumed from a checkpoint older than that bookkeeping), 'unknown' and the lower bound its
    last session gives, if recorded."""
    if row.get("train_seconds"):
        return f"{row['train_seconds'] / 60:.0f} min"
    last = row.get("last_session")
    if not last:
        return "unknown"
    return (
        f"unknown: over {last['seconds'] / 60:.0f} min (the last session's {last['steps']:,} "
        f"of {row['steps']:,} steps)"
    )


def dirty_section(rows):
    """The rows trained from a tree with uncommitted changes: their commit is not the whole code."""
    dirty = [r for r in rows if str(r.get("git_commit", "")).endswith("+dirty")]
    if not dirty:
        return []
    names = "\n".join(
        f"- {r['suite']} {r['mechanism']} seed {r['seed']} ({r['git_commit']})" for r in dirty
    )
    return [
        "## Rows trained from a tree with uncommitted changes\n",
        (
            f"{len(dirty)} row(s) name a commit ending in `+dirty`: their code was that commit "
            "plus changes never committed as such, so the commit alone does not rebuild it.\n"
        ),
        names + "\n",
    ]


def suite_table(name, rows, suite, task=None, paused=None):
    """Per mechanism: ours (mean, spread), the paper's number, chance, and the target's verdict
    (of `task`, for a suite of several); a mechanism without a row says so, and at which step its
    carried checkpoint is where `paused` ({mechanism: step}) has one."""
    lines = []
    paused = paused or {}
    task = task or (suite.tasks[0] if suite else None)
    paper = suite.paper_of(task) if suite else {}
    for mechanism in suite.mechanisms if suite else sorted({r["mechanism"] for r in rows}):
        done = [r for r in rows if r["mechanism"] == mechanism]
        if not done:
            missing = (
                f"missing: paused at step {paused[mechanism]:,} (carried in "
                f"{paused_runs.PAUSED.name}/)"
                if mechanism in paused
                else "missing: not run yet"
            )
            lines.append(
                [f"`{mechanism}`", missing, "", "", *paper_cells(paper, mechanism), "", ""]
            )
            continue
        accuracies = [100 * r["test_accuracy"] for r in done]
        mean = statistics.fmean(accuracies)
        target = suite.target_of(mechanism) if suite else None
        verdict = "" if target is None else ("met" if mean >= target else f"missed ({target})")
        chance = done[0].get("chance")
        trained = [
            r["final_train_accuracy"] for r in done if r.get("final_train_accuracy") is not None
        ]
        lines.append(
            [
                f"`{mechanism}`",
                spread(accuracies),
                f"{statistics.fmean(100 * r['best_val_accuracy'] for r in done):.1f}",
                f"{100 * statistics.fmean(trained):.1f}" if trained else "",
                *paper_cells(paper, mechanism),
                "" if chance is None else f"{100 * chance:.1f}",
                verdict,
            ]
        )
    return table(
        [
            "mechanism",
            "test accuracy % (ours)",
            "best validation %",
            f"training % (last {TRAIN_WINDOWS} logs)",
            *paper_header(suite, paper),
            "majority class %",
            "target",
        ],
        lines,
    )


def paper_header(suite, paper):
    """The paper column's heading, none where `paper` (the suite's numbers) is empty."""
    return [f"{suite.paper_source} %"] if paper else []


def paper_cells(paper, mechanism):
    """The paper column's cell for `mechanism`, blank where `paper` ({mechanism: number}) lacks
    it; no cell at all where the suite has no paper numbers (its tables have no such column)."""
    if not paper:
        return []
    number = paper.get(mechanism)
    return ["" if number is None else f"{number:.2f}"]


def suite_heading(suite):
    """What a suite trains: task, preset, target and its own settings."""
    names = ", ".join(f"`{task}`" for task in suite.tasks)
    text = f"Task{'s' if len(suite.tasks) > 1 else ''} {names}, preset `{suite.preset or 'none'}`"
    if suite.target:
        text += f"; target: every mechanism at or above {suite.target}%"
    own = ", ".join(f"`{m}` {t}%" for m, t in suite.target_per_mechanism.items())
    text += f" (except {own})" if own else ""
    text += ".\n"
    if suite.overrides:
        text += f"Settings: `{' '.join(suite.overrides)}`.\n"
    for mechanism, extra in suite.overrides_per_mechanism.items():
        text += f"`{mechanism}` also: `{' '.join(extra)}`.\n"
    return text


def listops_rules(suite, task, recorded=LISTOPS_RULES):
    """{label: accuracy %} of the ListOps rules recorded in `recorded` for a suite `task` that
    reads the default generated ListOps data (no data_dir, no generator_spec of its own); {}
    otherwise or where nothing is recorded."""
    if (
        task != "listops"
        or suite is None
        or suite.data_dir
        or any("generator_spec" in value for value in suite.overrides)
    ):
        return {}
    rules = files.read_json(recorded)
    if not rules:
        return {}
    return {
        f"{rules['names'][level]} rule ({100 * rules['levels'][level]:.1f}%)": 100
        * rules["levels"][level]
        for level in SHOWN_LEVELS
    }


def rules_line(rules):
    """The report's sentence under a ListOps table: what the rules score on its test split."""
    return (
        f"Rules on this data's test split ({LISTOPS_RULES.name}, `python -m arena_tf.analysis "
        f"listops-baselines data/listops`): {', '.join(rules)}.\n"
    )


def plot_curves(name, rows, path, rules=None):
    """Validation accuracy (%) against step, one line per run (its own colour and marker), each
    task's chance as a dotted line, the `rules` ({label: accuracy %}) as grey dashed ones, on an
    axis at least 10 points tall (a run flat at chance stays flat), to `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 4.8))
    several = len({row["task"] for row in rows}) > 1
    drawn = [row for row in rows if row.get("validation_curve")]
    labels = [
        f"{row['task'] + ' ' if several else ''}{row['mechanism']} seed {row['seed']}"
        for row in drawn
    ]
    styles = plot_style.series_styles(labels)
    curves = [tuple(map(tuple, row["validation_curve"])) for row in drawn]
    first_of = {}  # curve -> the label that drew it first: later copies say so and stagger markers
    for index, (row, label, curve) in enumerate(zip(drawn, labels, curves)):
        steps, values = zip(*curve)
        twin = first_of.setdefault(curve, label)
        every = max(len(steps) // 12, curves.count(curve))
        axes.plot(
            steps,
            [100 * v for v in values],
            markersize=4,
            linewidth=1.3,
            alpha=0.85,
            label=label if twin == label else f"{label} (same curve as {twin})",
            markevery=(index % every, every),
            **styles[label],
        )
    chances = {row["task"]: 100 * row["chance"] for row in drawn if row.get("chance")}
    for task, chance in chances.items():
        plot_style.chance_line(
            axes, chance, f"chance{' ' + task if several else ''} ({chance:.1f}%)"
        )
    plot_style.reference_lines(axes, rules or {})
    plot_style.at_least(axes, "y", span=10.0, bounds=(0.0, 100.0))
    axes.set(
        xlabel="training step",
        ylabel="validation accuracy (%)",
        title=f"{name}: validation accuracy while training",
    )
    axes.grid(True, alpha=0.3)
    axes.legend(
        fontsize=7,
        ncol=2 if len(labels) > 8 else 1,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    with files.atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)


def settings_of(command):
    """{name: value} of a train command's --preset, --data-dir and --set values (a later value of
    a name wins, as in train), without the BOOKKEEPING ones; recorded commands may spell flags
    with underscores (`--data_dir`), as older rows do."""
    values = {}
    for word in shlex.split(command):
        option, _, value = word.partition("=")
        option = "--" + option[2:].replace("_", "-") if option.startswith("--") else option
        if option == "--set":
            name, _, value = value.partition("=")
            values[name] = value
        elif option in ("--preset", "--data-dir"):
            values[option[2:].replace("-", "_")] = value
    return {name: value for name, value in values.items() if name not in BOOKKEEPING}


def attempts_table(rows):
    """The runs of one task and mechanism in several suites, each with the settings in which the
    runs differ (`unset`: the task's, model's or preset's own value)."""
    settings = [settings_of(row["command"]) for row in rows]
    names = sorted({name for values in settings for name in values})
    differing = [name for name in names if len({values.get(name) for values in settings}) > 1]
    lines = [
        [
            row["suite"],
            row["seed"],
            " ".join(f"{name}={values.get(name, 'unset')}" for name in differing) or "the same",
            f"{100 * row['test_accuracy']:.1f}",
            f"{100 * row['best_val_accuracy']:.1f}",
            row["steps"],
        ]
        for row, values in zip(rows, settings)
    ]
    return table(
        ["suite", "seed", "settings that differ", "test %", "best validation %", "steps"], lines
    )


def attempts_section(rows):
    """Every task and mechanism trained in more than one suite: its attempts side by side, so the
    choice that changed the result shows with the runs that show it."""
    groups = {}
    for row in sorted(rows, key=lambda r: (r["task"], r["mechanism"], r["suite"], r["seed"])):
        groups.setdefault((row["task"], row["mechanism"]), []).append(row)
    parts = [
        f"### {task}: `{mechanism}`\n\n" + attempts_table(group) + "\n"
        for (task, mechanism), group in groups.items()
        if len({row["suite"] for row in group}) > 1
    ]
    if not parts:
        return []
    return [
        "## Attempts: what changed the result\n",
        (
            "Each task and mechanism trained in more than one suite, its runs side by side with "
            "the settings in which they differ (taken from each row's command).\n"
        ),
        *parts,
    ]


def runs_table(rows):
    """One line per run: its numbers, where it ran, its command, and (once any row of the suite has
    one) its re-runs with their differences."""
    with_reruns = any(r.get("reruns") for r in rows)
    header = [
        "mechanism",
        "seed",
        "test %",
        "steps",
        "train time",
        "device, backend",
        "commit",
        "command",
    ]
    if with_reruns:
        header.append("re-runs: test % (points from the row, device)")
    return table(
        header,
        [
            [
                r["mechanism"],
                r["seed"],
                f"{100 * r['test_accuracy']:.2f}",
                r["steps"],
                time_cell(r),
                ", ".join(filter(None, (r["device"], r.get("backend")))),
                r["git_commit"],
                f"`{command_of(r)}`",
                *([reruns.cell(r)] if with_reruns else []),
            ]
            for r in rows
        ],
    )


def carried_runs(suite, task, paused_dir):
    """The runs of `task` in `suite` carried unfinished in `paused_dir`."""
    return [
        run for run in plan(suite, tasks=[task], paused_dir=paused_dir) if run.archive.is_file()
    ]


def paused_steps(suite, task, paused_dir):
    """{mechanism: step} of the runs of `task` carried unfinished in `paused_dir`."""
    return {
        run.mechanism: paused_runs.archived(run.archive)[0]
        for run in carried_runs(suite, task, paused_dir)
    }


def task_tables(name, rows, suite, paused_dir):
    """[(task, table)] of suite `name` (None where its file is gone): the table of its `rows` per
    task, a missing mechanism naming the step of its checkpoint carried in `paused_dir`."""
    tasks = suite.tasks if suite else sorted({r["task"] for r in rows})
    return [
        (
            task,
            suite_table(
                name,
                [r for r in rows if r["task"] == task],
                suite,
                task,
                paused_steps(suite, task, paused_dir) if suite else {},
            ),
        )
        for task in tasks
    ]


def headline_cell(done, suite, mechanism, paused=False):
    """'35.4 (3 seeds), met' of one mechanism's rows in a suite; without rows, 'paused' where its
    run is carried unfinished (the report names the step), else 'not run'."""
    if not done:
        return "paused" if paused else "not run"
    accuracies = [100 * r["test_accuracy"] for r in done]
    mean = statistics.fmean(accuracies)
    seeds = f" ({len(done)} seeds)" if len(done) > 1 else ""
    target = suite.target_of(mechanism)
    verdict = "" if target is None else (", met" if mean >= target else f", under {target}")
    return f"{mean:.1f}{seeds}{verdict}"


def headline(rows, suites_dir=SUITES, names=README_SUITES, paused_dir=paused_runs.PAUSED):
    """The README's summary: per mechanism, each of the suites `names` (one task each): our test
    accuracy with the target's verdict, beside the paper's number where the suite has one; a run
    carried unfinished in `paused_dir` reads 'paused'."""
    suites = [load_suite(name, suites_dir) for name in names]
    paused = {
        suite.name: {run.mechanism for run in carried_runs(suite, suite.tasks[0], paused_dir)}
        for suite in suites
    }
    mechanisms = list(dict.fromkeys(m for suite in suites for m in suite.mechanisms))
    papers = [suite.paper_of(suite.tasks[0]) for suite in suites]
    header = ["mechanism"]
    for suite, paper in zip(suites, papers):
        header += [f"`{suite.name}` ({suite.tasks[0]}) test %"]
        header += paper_header(suite, paper)
    lines = []
    for mechanism in mechanisms:
        line = [f"`{mechanism}`"]
        for suite, paper in zip(suites, papers):
            done = [r for r in rows if r["suite"] == suite.name and r["mechanism"] == mechanism]
            inside = mechanism in suite.mechanisms
            line += [
                headline_cell(done, suite, mechanism, mechanism in paused[suite.name])
                if inside
                else "",
                *paper_cells(paper, mechanism),
            ]
        lines.append(line)
    return table(header, lines)


def with_summary(text, rows, suites_dir=SUITES):
    """README text with its results section replaced by the `headline` of `rows`."""
    return replace_section(text, "results", headline(rows, suites_dir))


def render(
    results=RESULTS, doc=REPORT, suites_dir=SUITES, paused_dir=paused_runs.PAUSED, plots=True
):
    """The report's text from results.json alone (a mechanism without a row names the step of its
    checkpoint carried in `paused_dir`, if any), drawing a learning-curve PNG per suite beside
    `doc` unless `plots` is False."""
    rows = read_results(results)
    doc = pathlib.Path(doc)
    parts = [
        "# Reproduction\n",
        (
            "Generated by `python -m arena_tf.reproduce report` from "
            f"`{pathlib.Path(results).name}` in `{pathlib.Path(results).parent.name}/`, whose "
            "rows `python -m arena_tf.reproduce SUITE` writes as each run finishes. Every row "
            "holds the command that reproduces it, the commit and the device. Mechanisms without "
            "a row are shown as missing, never estimated.\n"
        ),
    ]
    files_of_suites = set(suite_paths(suites_dir))
    for name in sorted({r["suite"] for r in rows} | files_of_suites):
        suite = load_suite(name, suites_dir) if name in files_of_suites else None
        mine = [r for r in rows if r["suite"] == name]
        parts.append(f"## {name}\n")
        if suite:
            parts.append(suite_heading(suite))
        tables = task_tables(name, mine, suite, paused_dir)
        rules = {}
        for task, text in tables:
            if len(tables) > 1:
                parts.append(f"### {task}\n")
            parts.append(text + "\n")
            rules = listops_rules(suite, task)
            if rules:
                parts.append(rules_line(rules))
        if mine:
            image = doc.parent / f"{name}.png"
            if plots:
                image.parent.mkdir(parents=True, exist_ok=True)
                plot_curves(name, mine, image, rules)
            parts.append(f"![{name} learning curves]({image.name})\n")
            parts.append(runs_table(mine) + "\n")
    parts.extend(attempts_section(rows))
    parts.extend(dirty_section(rows))
    return "\n".join(parts)


def write(results=RESULTS, doc=REPORT, suites_dir=SUITES, paused_dir=paused_runs.PAUSED):
    """Write the report (and its learning-curve PNGs) to `doc`; the path written."""
    files.write_text(doc, render(results, doc, suites_dir, paused_dir))
    return pathlib.Path(doc)
