"""The report: docs/reproduction.md, a learning-curve PNG per suite and the README's summary,
generated from results.json alone (and the runs carried in paused/, shown by their step).

Per suite and task: each mechanism's mean and spread over seeds beside the paper's number, the
majority class and the target's verdict; a mechanism without a row is shown as missing, never
estimated. Then every run with its command, and each mechanism's attempts in several suites side
by side with the settings in which they differ.
"""

import pathlib
import shlex
import statistics

from arena_tf import files
from arena_tf.markdown import replace_section, table
from arena_tf.reproduce import paused_runs, reruns
from arena_tf.reproduce.results import RESULTS, TRAIN_WINDOWS, command_of, read_results
from arena_tf.reproduce.suites import BOOKKEEPING, ROOT, SUITES, load_suite, plan

REPORT = ROOT / "docs" / "reproduction.md"
README = ROOT / "README.md"
README_SUITES = ("cpu-listops", "cpu-pathfinder")  # whose tables the README's summary shows


def spread(values):
    """'37.1' for one value, '36.8 ± 0.4 (3 seeds)' (mean ± sample standard deviation) for more."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.1f}"
    return f"{mean:.1f} ± {statistics.stdev(values):.1f} ({len(values)} seeds)"


def time_cell(row):
    """The report's training time of a row: minutes, or a lower bound from its last session."""
    if row["train_seconds"] is not None:
        return f"{row['train_seconds'] / 60:.0f} min"
    last = row["last_session"]
    return (f"over {last['seconds'] / 60:.0f} min (the last session's {last['steps']:,} of "
            f"{row['steps']:,} steps)")


def suite_table(name, rows, suite, task=None, paused=None):
    """Per mechanism: ours (mean, spread), the paper's number, chance, and the target's verdict
    (of `task`, for a suite of several); a mechanism without a row says so, and at which step its
    carried checkpoint is where `paused` ({mechanism: step}) has one."""
    lines = []
    paused = paused or {}
    task = task or (suite.tasks[0] if suite else None)
    for mechanism in (suite.mechanisms if suite else sorted({r["mechanism"] for r in rows})):
        done = [r for r in rows if r["mechanism"] == mechanism]
        paper = suite.paper_of(task).get(mechanism) if suite else None
        paper_cell = "" if paper is None else f"{paper:.2f}"
        if not done:
            missing = (f"missing: paused at step {paused[mechanism]:,} (carried in "
                       f"{paused_runs.PAUSED.name}/)" if mechanism in paused else
                       "missing: not run yet")
            lines.append([f"`{mechanism}`", missing, "", "", paper_cell, "", ""])
            continue
        accuracies = [100 * r["test_accuracy"] for r in done]
        mean = statistics.fmean(accuracies)
        target = suite.target_of(mechanism) if suite else None
        verdict = "" if target is None else ("met" if mean >= target else f"missed ({target})")
        chance = done[0].get("chance")
        trained = [r["final_train_accuracy"] for r in done
                   if r.get("final_train_accuracy") is not None]
        lines.append([f"`{mechanism}`", spread(accuracies),
                      f"{statistics.fmean(100 * r['best_val_accuracy'] for r in done):.1f}",
                      f"{100 * statistics.fmean(trained):.1f}" if trained else "",
                      paper_cell, "" if chance is None else f"{100 * chance:.1f}", verdict])
    source = suite.paper_source if suite else "LRA paper"
    return table(["mechanism", "test accuracy % (ours)", "best validation %",
                  f"training % (last {TRAIN_WINDOWS} logs)", f"{source} %", "majority class %",
                  "target"], lines)


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


def plot_curves(name, rows, path):
    """Validation accuracy against step, one line per run, to `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    several = len({row["task"] for row in rows}) > 1
    # One colour per task and mechanism (20 apart), one line style per seed.
    palette, colours = plt.get_cmap("tab20"), {}
    for row in rows:
        if row.get("validation_curve"):
            steps, values = zip(*row["validation_curve"])
            label = f"{row['task'] + ' ' if several else ''}{row['mechanism']} s{row['seed']}"
            colour = colours.setdefault((row["task"], row["mechanism"]), palette(len(colours) % 20))
            axes.plot(steps, [100 * v for v in values], label=label, color=colour,
                      linestyle=("-", "--", ":", "-.")[row["seed"] % 4])
    axes.set(xlabel="step", ylabel="validation accuracy (%)", title=f"{name}: learning curves")
    axes.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    with files.atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=100)
    plt.close(figure)


def settings_of(command):
    """{name: value} of a train command's --preset, --data_dir and --set values (a later value of
    a name wins, as in train), without the BOOKKEEPING ones."""
    values = {}
    for word in shlex.split(command):
        option, _, value = word.partition("=")
        if option == "--set":
            name, _, value = value.partition("=")
            values[name] = value
        elif option in ("--preset", "--data_dir"):
            values[option[2:]] = value
    return {name: value for name, value in values.items() if name not in BOOKKEEPING}


def attempts_table(rows):
    """The runs of one task and mechanism in several suites, each with the settings in which the
    runs differ (`unset`: the task's, model's or preset's own value)."""
    settings = [settings_of(row["command"]) for row in rows]
    names = sorted({name for values in settings for name in values})
    differing = [name for name in names if len({values.get(name) for values in settings}) > 1]
    lines = [[row["suite"], row["seed"],
              " ".join(f"{name}={values.get(name, 'unset')}" for name in differing) or "the same",
              f"{100 * row['test_accuracy']:.1f}", f"{100 * row['best_val_accuracy']:.1f}",
              row["steps"]]
             for row, values in zip(rows, settings)]
    return table(["suite", "seed", "settings that differ", "test %", "best validation %", "steps"],
                 lines)


def attempts_section(rows):
    """Every task and mechanism trained in more than one suite: its attempts side by side, so the
    choice that changed the result shows with the runs that show it."""
    groups = {}
    for row in sorted(rows, key=lambda r: (r["task"], r["mechanism"], r["suite"], r["seed"])):
        groups.setdefault((row["task"], row["mechanism"]), []).append(row)
    parts = [f"### {task}: `{mechanism}`\n\n" + attempts_table(group) + "\n"
             for (task, mechanism), group in groups.items()
             if len({row["suite"] for row in group}) > 1]
    if not parts:
        return []
    return ["## Attempts: what changed the result\n",
            ("Each task and mechanism trained in more than one suite, its runs side by side with "
             "the settings in which they differ (taken from each row's command).\n"), *parts]


def runs_table(rows):
    """One line per run: its numbers, where it ran, its command, and (once any row of the suite has
    one) its re-runs with their differences."""
    with_reruns = any(r.get("reruns") for r in rows)
    header = ["mechanism", "seed", "test %", "steps", "train time", "device, backend", "commit",
              "command"]
    if with_reruns:
        header.append("re-runs: test % (points from the row, device)")
    return table(header, [[r["mechanism"], r["seed"], f"{100 * r['test_accuracy']:.2f}",
                           r["steps"], time_cell(r),
                           ", ".join(filter(None, (r["device"], r.get("backend")))),
                           r["git_commit"], f"`{command_of(r)}`",
                           *([reruns.cell(r)] if with_reruns else [])] for r in rows])


def paused_steps(suite, task, paused_dir):
    """{mechanism: step} of the runs of `task` carried unfinished in `paused_dir`."""
    carried = [run for run in plan(suite, tasks=[task], paused_dir=paused_dir)
               if run.archive.is_file()]
    return {run.mechanism: paused_runs.archived(run.archive)[0] for run in carried}


def task_tables(name, rows, suite, paused_dir):
    """[(task, table)] of suite `name` (None where its file is gone): the table of its `rows` per
    task, a missing mechanism naming the step of its checkpoint carried in `paused_dir`."""
    tasks = suite.tasks if suite else sorted({r["task"] for r in rows})
    return [(task, suite_table(name, [r for r in rows if r["task"] == task], suite, task,
                               paused_steps(suite, task, paused_dir) if suite else {}))
            for task in tasks]


def readme_summary(rows, suites_dir=SUITES, paused_dir=paused_runs.PAUSED):
    """The README's reproduction section: the tables of README_SUITES, as the report shows them."""
    parts = []
    for name in README_SUITES:
        suite = load_suite(name, suites_dir)
        what = suite_heading(suite).splitlines()[0]
        for task, text in task_tables(name, [r for r in rows if r["suite"] == name], suite,
                                      paused_dir):
            label = f"`{name}` ({task})" if len(suite.tasks) > 1 else f"`{name}`"
            parts.append(f"{label}. {what}\n\n{text}")
    return "\n\n".join(parts)


def with_summary(text, rows, suites_dir=SUITES, paused_dir=paused_runs.PAUSED):
    """README text with its reproduction section replaced by `readme_summary` of `rows`."""
    return replace_section(text, "reproduction", readme_summary(rows, suites_dir, paused_dir))


def write(results=RESULTS, doc=REPORT, suites_dir=SUITES, paused_dir=paused_runs.PAUSED):
    """docs/reproduction.md (and a learning-curve PNG per suite) from results.json alone; a
    mechanism without a row names the step of its checkpoint carried in `paused_dir`, if any.
    The repository's own report (`doc` = docs/reproduction.md) updates the README's summary too,
    where the tree has a README."""
    rows = read_results(results)
    doc = pathlib.Path(doc)
    parts = ["# Reproduction\n",
             ("Generated by `python -m arena_tf.reproduce report` from "
              f"`{pathlib.Path(results).name}` in `{pathlib.Path(results).parent.name}/`, whose "
              "rows `python -m arena_tf.reproduce SUITE` writes as each run finishes. Every row "
              "holds the command that reproduces it, the commit and the device. Mechanisms without "
              "a row are shown as missing, never estimated.\n")]
    files_of_suites = {p.stem for p in pathlib.Path(suites_dir).glob("*.yaml")}
    for name in sorted({r["suite"] for r in rows} | files_of_suites):
        suite = load_suite(name, suites_dir) if name in files_of_suites else None
        mine = [r for r in rows if r["suite"] == name]
        parts.append(f"## {name}\n")
        if suite:
            parts.append(suite_heading(suite))
        tables = task_tables(name, mine, suite, paused_dir)
        for task, text in tables:
            if len(tables) > 1:
                parts.append(f"### {task}\n")
            parts.append(text + "\n")
        if mine:
            image = doc.parent / "reproduction" / f"{name}.png"
            image.parent.mkdir(parents=True, exist_ok=True)
            plot_curves(name, mine, image)
            parts.append(f"![{name} learning curves](reproduction/{image.name})\n")
            parts.append(runs_table(mine) + "\n")
    parts.extend(attempts_section(rows))
    files.write_text(doc, "\n".join(parts))
    if doc == REPORT and README.is_file():  # not in a partial copy of the tree (a lent GPU's)
        files.write_text(README, with_summary(README.read_text(), rows, suites_dir, paused_dir))
    return doc
