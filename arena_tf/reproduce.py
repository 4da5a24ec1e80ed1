"""Reproduction suites: named sets of training runs, and the report that puts them beside the paper.

    python -m arena_tf.reproduce cpu-listops [--mechanisms full,linear] [--seeds 0,1,2] [--resume]
    python -m arena_tf.reproduce cpu-listops --list      # what is done, interrupted, to run
    python -m arena_tf.reproduce report                  # docs/reproduction.md from results.json
    python -m arena_tf.reproduce merge FILE [FILE ...]   # add the rows another machine recorded
    python -m arena_tf.reproduce pack [SUITE ...]        # carry unfinished runs in the repository

A suite is a small YAML file in configs/suites/ (task, preset, mechanisms, seeds, the paper's
numbers), not code. Each run is one `python -m arena_tf.train` command with its own run directory
under runs/reproduce/SUITE/; that exact command is stored with its result, so any row can be
re-run by hand. A finished run (metrics.json written) is skipped; an interrupted one (checkpoints,
no metrics.json) continues from its newest checkpoint with --resume and is refused without it (so
that a half-finished run is never mistaken for a new one). After every run its row goes into
docs/reproduction/results.json (written atomically) and the report is regenerated from that file
alone: every number of docs/reproduction.md comes from a run of its own command. `pack` puts each
unfinished run's newest checkpoint under docs/reproduction/paused/ (arena_tf/paused_runs.py), so
that a run outlives the machine it started on: --resume on another checkout goes on from there.
"""

import dataclasses
import datetime
import json
import os
import pathlib
import shlex
import statistics
import subprocess
import sys
import time

import yaml

from arena_tf import cli, files, paused_runs, reruns
from arena_tf.markdown import replace_section, table
from arena_tf.training.loop import EXIT_PAUSED, cpu_device
from arena_tf.training.run_dir import checkpoint_steps

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUITES = ROOT / "configs" / "suites"
RESULTS = ROOT / "docs" / "reproduction" / "results.json"
REPORT = ROOT / "docs" / "reproduction.md"
RUNS = pathlib.Path("runs") / "reproduce"
README = ROOT / "README.md"
README_SUITES = ("cpu-listops", "cpu-pathfinder")  # whose tables the README's summary shows
TRAIN_WINDOWS = 10  # logged training windows averaged into a row's final training accuracy
# Settings that decide when a run logs, evaluates or checkpoints, not what it learns.
BOOKKEEPING = ("train.seed", "train.log_every", "train.eval_every", "train.eval_batches",
               "train.checkpoint_every")


@dataclasses.dataclass(frozen=True)
class Suite:
    """One task (`task: listops`) or several (`task: [listops, image]`: each run's directory and
    row then name the task, and `paper` gives {task: {mechanism: number}})."""

    name: str
    task: object  # a task name, or a list of them
    mechanisms: tuple
    seeds: tuple
    seeds_per_mechanism: dict
    paper: dict
    preset: str = None
    target: float = None
    overrides: tuple = ()  # --set values for every run
    data_dir: str = None
    # A mechanism's own --set values (after the suite's) and target, where it differs.
    overrides_per_mechanism: dict = dataclasses.field(default_factory=dict)
    target_per_mechanism: dict = dataclasses.field(default_factory=dict)
    paper_source: str = "LRA paper"  # where the `paper` numbers come from

    @property
    def tasks(self):
        return (self.task,) if isinstance(self.task, str) else tuple(self.task)

    def paper_of(self, task):
        """{mechanism: the paper's number} for `task`."""
        return self.paper if isinstance(self.task, str) else self.paper.get(task, {})

    def seeds_of(self, mechanism):
        return tuple(self.seeds_per_mechanism.get(mechanism, self.seeds))

    def overrides_of(self, mechanism):
        return (*self.overrides, *self.overrides_per_mechanism.get(mechanism, ()))

    def target_of(self, mechanism):
        return self.target_per_mechanism.get(mechanism, self.target)


@dataclasses.dataclass(frozen=True)
class Run:
    suite: Suite
    mechanism: str
    seed: int
    runs_dir: pathlib.Path
    task: str = None  # the suite's task where it has one
    paused_dir: pathlib.Path = paused_runs.PAUSED  # where `pack` carries it when unfinished

    @property
    def task_name(self):
        return self.task or self.suite.tasks[0]

    @property
    def run_dir(self):
        folder = self.runs_dir / self.suite.name
        if len(self.suite.tasks) > 1:
            folder = folder / self.task_name
        return folder / f"{self.mechanism}-seed{self.seed}"

    @property
    def arguments(self):
        """The train command's arguments after `python -m arena_tf.train`."""
        suite = self.suite
        return [f"--task={self.task_name}", f"--model={self.mechanism}",
                *([f"--preset={suite.preset}"] if suite.preset else []),
                *(f"--set={value}" for value in suite.overrides_of(self.mechanism)),
                f"--set=train.seed={self.seed}", f"--run_dir={self.run_dir}",
                *([f"--data_dir={suite.data_dir}"] if suite.data_dir else [])]

    @property
    def command(self):
        return "python -m arena_tf.train " + " ".join(map(shlex.quote, self.arguments))

    @property
    def key(self):
        """(task, mechanism, seed): the run's row in its suite's part of results.json."""
        return self.task_name, self.mechanism, self.seed

    @property
    def archive(self):
        """Where `pack` carries this run while it is unfinished."""
        return paused_runs.archive_of(self.run_dir, self.runs_dir, self.paused_dir)

    def state(self):
        """'done', 'interrupted' (checkpoints, no results), 'paused' (no run directory here, its
        newest checkpoint packed in the repository by this Keras backend) or 'new'."""
        if (self.run_dir / "metrics.json").is_file():
            return "done"
        if checkpoint_steps(self.run_dir / "checkpoints"):
            return "interrupted"
        if self.archive.is_file() and paused_runs.archived(self.archive)[1] == keras_backend():
            return "paused"
        return "new"


def keras_backend():
    """The backend the suite's train commands run under (they inherit this environment)."""
    import keras

    return keras.backend.backend()


def load_suite(name, suites_dir=SUITES):
    path = pathlib.Path(suites_dir) / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in pathlib.Path(suites_dir).glob("*.yaml"))
        raise cli.UsageError(f"unknown suite {name!r}",
                             f"one of {', '.join(known)}, report, merge or pack",
                             f"pick a suite, or add {path}")
    raw = yaml.safe_load(path.read_text()) or {}
    fields = {field.name for field in dataclasses.fields(Suite)} - {"name"}
    unknown = sorted(set(raw) - fields)
    if unknown:
        raise cli.UsageError(f"{path}: unknown key {unknown[0]!r}", f"keys among {sorted(fields)}",
                             "correct the suite file")
    return Suite(name=name, **{**raw, "mechanisms": tuple(raw.get("mechanisms", ())),
                               "seeds": tuple(raw.get("seeds", (0,))),
                               "seeds_per_mechanism": raw.get("seeds_per_mechanism", {}),
                               "overrides": tuple(raw.get("overrides", ()))})


def chosen(what, asked, available, suite):
    """`asked` (or all of `available`), refused in one line where it names one not available."""
    unknown = sorted(set(asked or ()) - set(available))
    if unknown:
        raise cli.UsageError(f"{what} {unknown[0]!r} is not in suite {suite.name}",
                             f"some of {', '.join(available)}", f"fix --{what}s")
    return asked or available


def plan(suite, mechanisms=None, seeds=None, runs_dir=RUNS, tasks=None,
         paused_dir=paused_runs.PAUSED):
    """The suite's runs (restricted to `mechanisms`, `seeds` and `tasks` when given), in suite
    order."""
    mechanisms = chosen("mechanism", mechanisms, suite.mechanisms, suite)
    tasks = chosen("task", tasks, suite.tasks, suite)
    return [Run(suite, mechanism, seed, pathlib.Path(runs_dir), task, pathlib.Path(paused_dir))
            for task in suite.tasks if task in tasks
            for mechanism in suite.mechanisms if mechanism in mechanisms
            for seed in (seeds if seeds is not None else suite.seeds_of(mechanism))]


# -- results ------------------------------------------------------------------------------------


def git_commit():
    """The checkout's commit, '+dirty' when tracked files differ from it; outside git (a copy of
    the working tree on a lent machine) the ARENA_TF_COMMIT the copy was made from, else None."""
    if os.environ.get("ARENA_TF_COMMIT"):
        return os.environ["ARENA_TF_COMMIT"]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def result_row(run):
    """The results.json row of a finished run, from its metrics.json and TensorBoard events."""
    from arena_tf.training.events import read_scalars

    metrics = json.loads((run.run_dir / "metrics.json").read_text())
    curve = read_scalars(run.run_dir / "validation").get("accuracy", {})
    trained = read_scalars(run.run_dir / "train").get("accuracy", {})
    return {
        "suite": run.suite.name, "task": run.task_name, "mechanism": run.mechanism,
        "seed": run.seed, "test_accuracy": metrics["test_accuracy"],
        "best_val_accuracy": max(curve.values(), default=metrics["validation_accuracy"]),
        "chance": metrics.get("test_chance"), "test_examples": metrics["test_examples"],
        "steps": metrics["steps"], **training_time(metrics),
        "device": metrics.get("device") or cpu_device(), "backend": metrics.get("backend"),
        "git_commit": git_commit(),
        "date": datetime.date.today().isoformat(),
        "command": command_of({"command": run.command, "backend": metrics.get("backend")}),
        "validation_curve": [[step, value] for step, value in sorted(curve.items())],
        "final_train_accuracy": final_train_accuracy(trained),
    }


def training_time(metrics):
    """{"train_seconds": the whole run's} (over every session it was resumed in), or, for a run
    resumed from a checkpoint that carries no time, {"train_seconds": None, "last_session":
    {"seconds", "steps"}}: what the last session took, a lower bound."""
    total = metrics.get("train_seconds")
    if total is None and metrics.get("trained_steps", metrics["steps"]) == metrics["steps"]:
        total = metrics["wall_time_s"]  # not resumed (or written before train_seconds existed)
    if total is not None:
        return {"train_seconds": round(total, 1)}
    return {"train_seconds": None, "last_session": {"seconds": round(metrics["wall_time_s"], 1),
                                                    "steps": metrics["trained_steps"]}}


def time_cell(row):
    """The report's training time of a row: minutes, or a lower bound from its last session."""
    if row["train_seconds"] is not None:
        return f"{row['train_seconds'] / 60:.0f} min"
    last = row["last_session"]
    return (f"over {last['seconds'] / 60:.0f} min (the last session's {last['steps']:,} of "
            f"{row['steps']:,} steps)")


def command_of(row):
    """The row's command as a shell runs it: a backend other than the default TensorFlow named in
    front (KERAS_BACKEND=jax ...), also for rows recorded before the command carried it."""
    backend, command = row.get("backend"), row["command"]
    if backend in (None, "tensorflow") or command.startswith("KERAS_BACKEND="):
        return command
    return f"KERAS_BACKEND={backend} {command}"


def final_train_accuracy(accuracy_by_step):
    """Mean training accuracy of the last TRAIN_WINDOWS logged windows (None without any): beside
    the validation accuracy it tells a model that underfits from one that overfits."""
    last = [value for _, value in sorted(accuracy_by_step.items())[-TRAIN_WINDOWS:]]
    return statistics.fmean(last) if last else None


def read_results(path=RESULTS):
    path = pathlib.Path(path)
    return json.loads(path.read_text()) if path.is_file() else []


def row_key(row):
    """What identifies a results.json row: its suite, task, mechanism and seed."""
    return row["suite"], row["task"], row["mechanism"], row["seed"]


def record(row, path=RESULTS):
    """results.json with `row` in place of any row of the same suite, task, mechanism and seed."""
    return record_all([row], path)


def record_all(new_rows, path=RESULTS):
    """results.json with `new_rows` in place of any rows of the same keys, written once."""
    new = {row_key(r): r for r in new_rows}
    rows = [r for r in read_results(path) if row_key(r) not in new] + list(new.values())
    rows.sort(key=row_key)
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    files.write_json(path, rows)
    return rows


def without_reruns(row):
    return {name: value for name, value in row.items() if name != "reruns"}


def merge(paths, results=RESULTS):
    """Record the rows of other results.json files (a lent machine's copies) that ours lacks, and
    the re-runs of our rows that ours lacks; the number of rows added or given re-runs. A row that
    differs from ours (re-runs aside) under the same suite, task, mechanism and seed is refused in
    one line before anything is written, never overwritten."""
    ours = {row_key(r): r for r in read_results(results)}
    new = {}
    for path in paths:
        try:
            listed = json.loads(pathlib.Path(path).read_text())
            if not isinstance(listed, list):
                raise TypeError(f"a {type(listed).__name__}, not a list")
            rows = {row_key(r): r for r in listed}
        except (OSError, ValueError, TypeError, KeyError) as error:
            raise cli.UsageError(f"{path} is not a results.json ({error})",
                                 "a JSON list of rows that `reproduce SUITE` wrote",
                                 "name the results-N.json files a lent machine brought back") \
                from None
        for name, row in rows.items():
            known = new.get(name, ours.get(name))
            if known is None:
                new[name] = row
                continue
            if without_reruns(known) != without_reruns(row):
                raise cli.UsageError(f"{path} has another result for {'/'.join(map(str, name))}",
                                     "rows that results.json lacks or holds unchanged (re-runs "
                                     "aside)",
                                     "remove the older row from one of the files, then merge")
            extra = [e for e in row.get("reruns", ()) if e not in known.get("reruns", ())]
            if extra:
                new[name] = {**known, "reruns": [*known.get("reruns", ()), *extra]}
    if new:
        record_all(new.values(), results)
    return len(new)


# -- the report ---------------------------------------------------------------------------------


def spread(values):
    """'37.1' for one value, '36.8 ± 0.4 (3 seeds)' (mean ± sample standard deviation) for more."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.1f}"
    return f"{mean:.1f} ± {statistics.stdev(values):.1f} ({len(values)} seeds)"


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
    for row in rows:
        if row.get("validation_curve"):
            steps, values = zip(*row["validation_curve"])
            label = f"{row['task'] + ' ' if several else ''}{row['mechanism']} s{row['seed']}"
            axes.plot(steps, [100 * v for v in values], label=label)
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
            parts.append(f"`{name}`{f' ({task})' if len(suite.tasks) > 1 else ''}. {what}\n\n{text}")
    return "\n\n".join(parts)


def with_summary(text, rows, suites_dir=SUITES, paused_dir=paused_runs.PAUSED):
    """README text with its reproduction section replaced by `readme_summary` of `rows`."""
    return replace_section(text, "reproduction", readme_summary(rows, suites_dir, paused_dir))


def report(results=RESULTS, doc=REPORT, suites_dir=SUITES, paused_dir=paused_runs.PAUSED):
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


# -- running ------------------------------------------------------------------------------------


def run_suite(suite, runs, resume=False, results=RESULTS, doc=REPORT, suites_dir=SUITES,
              time_limit=None):
    """Train every run not done yet, recording each as it finishes; the number trained. With
    `time_limit` (seconds) the suite stops at a checkpoint once that much time went by (the run
    under way pauses; --resume continues it)."""
    began = time.monotonic()
    recorded = recorded_runs(suite, results)
    states = [run.state() for run in runs]  # a paused run's state reads its archive: once
    interrupted = [run for run, state in zip(runs, states) if state == "interrupted"
                   or (state == "paused" and run.key not in recorded)]
    if interrupted and not resume:
        names = ", ".join(str(run.run_dir) for run in interrupted[:3])
        raise cli.UsageError(f"{len(interrupted)} run(s) of {suite.name} were interrupted ({names})",
                             "--resume to continue them from their checkpoints",
                             "rerun with --resume, or delete those run directories (and their "
                             f"archives in {paused_runs.PAUSED.name}/) to start over")
    trained = 0
    for number, (run, state) in enumerate(zip(runs, states), 1):
        if state != "interrupted" and run.key in recorded:  # else: recorded on another machine
            elsewhere = "" if state == "done" else (
                " (recorded in results.json; remove its row to run it again)")
            print(f"reproduce: [{number}/{len(runs)}] {run.run_dir} done{elsewhere}", flush=True)
            continue
        if state == "paused":
            step = paused_runs.unpack(run.archive, run.run_dir)
            print(f"reproduce: unpacked {run.archive} into {run.run_dir} (step {step})", flush=True)
        elif state == "new" and run.archive.is_file():
            step, backend = paused_runs.archived(run.archive)
            print(f"reproduce: {run.archive} (step {step}) was written under {backend}; the run "
                  f"starts again under {keras_backend()}", flush=True)
        if state != "done":
            print(f"reproduce: [{number}/{len(runs)}] {'running' if state == 'new' else 'resuming'}"
                  f" {run.command}", flush=True)
            if not train(run.arguments, run.run_dir, time_left(time_limit, began)):
                return trained
            trained += 1
        record(result_row(run), results)
        run.archive.unlink(missing_ok=True)  # finished: its row replaces what was carried
        report(results, doc, suites_dir)
        print(f"reproduce: recorded {run.mechanism} seed {run.seed} in {results}; report {doc}",
              flush=True)
        if time_limit is not None and time.monotonic() - began >= time_limit:
            print("reproduce: time limit reached; rerun with --resume to go on", flush=True)
            return trained
    return trained


def time_left(time_limit, began):
    """Seconds of `time_limit` left since `began` (None: no limit)."""
    return None if time_limit is None else max(0, round(time_limit - (time.monotonic() - began)))


def train(arguments, run_dir, time_limit=None, environment=None, again="--resume"):
    """One `python -m arena_tf.train` run in a child process: True when it finished, False when it
    paused at `time_limit` (`again` continues it); a failure stops the suite in one line."""
    limit = [] if time_limit is None else [f"--time_limit={time_limit}"]
    status = subprocess.call([sys.executable, "-m", "arena_tf.train", *arguments, *limit],
                             env={**os.environ, **(environment or {})})
    if status == EXIT_PAUSED:
        print(f"reproduce: paused {run_dir} at the time limit; rerun with {again} to continue it",
              flush=True)
        return False
    if status:
        raise cli.RunError(f"run {run_dir} stopped with exit status {status}",
                           "every run of the suite to finish",
                           f"see its error above; rerun with {again} to continue")
    return True


def rerun_rows(suite, runs, results=RESULTS, doc=REPORT, suites_dir=SUITES, time_limit=None,
               reruns_dir=reruns.RERUNS):
    """Re-run the recorded rows of `runs` with their own commands (continuing a re-run directory
    left unfinished) and add each finished re-run to its row's `reruns`; the number added."""
    began, added = time.monotonic(), 0
    rows = {row_key(r): r for r in read_results(results)}
    for run in runs:
        row = rows.get((suite.name, *run.key))
        if row is None:
            print(f"reproduce: {run.mechanism} seed {run.seed} has no row to re-run", flush=True)
            continue
        run_dir = reruns.run_dir_of(row, reruns_dir)
        environment, arguments = reruns.command_of(row, run_dir)
        if not (run_dir / "metrics.json").is_file():
            print(f"reproduce: re-running {row['command']} in {run_dir}", flush=True)
            if not train(arguments, run_dir, time_left(time_limit, began), environment, "--rerun"):
                break
        metrics = reruns.finished(run_dir)
        if metrics is None:
            print(f"reproduce: the re-run in {run_dir} is recorded already", flush=True)
        else:
            entry = reruns.entry(metrics, training_time(metrics), cpu_device(), git_commit(),
                                 datetime.date.today().isoformat())
            record({**row, "reruns": [*row.get("reruns", ()), entry]}, results)
            (run_dir / reruns.RECORDED).touch()
            report(results, doc, suites_dir)
            added += 1
            print(f"reproduce: re-run of {run.mechanism} seed {run.seed}: "
                  f"{100 * entry['test_accuracy']:.2f}% against {100 * row['test_accuracy']:.2f}% "
                  f"({reruns.difference(row, entry):+.2f} points)", flush=True)
    return added


def pack_unfinished(runs, results=RESULTS):
    """Carry every interrupted run of `runs` in the repository (its archive replaced, unless the
    archive holds a checkpoint as far on: an unchanged run is not packed again) and drop the
    archives of recorded runs; printed per run."""
    recorded = {row_key(r) for r in read_results(results)}
    for run in runs:
        if (run.suite.name, *run.key) in recorded:
            if run.archive.is_file():
                run.archive.unlink()
                print(f"reproduce: {run.run_dir} is recorded; removed {run.archive}")
            continue
        if run.state() != "interrupted":
            continue
        carried, _ = paused_runs.archived(run.archive) if run.archive.is_file() else (None, None)
        if carried and carried >= checkpoint_steps(run.run_dir / "checkpoints")[0]:
            print(f"reproduce: kept {run.archive} (step {carried}: {run.run_dir} is no further)")
            continue
        step = paused_runs.pack(run.run_dir, run.archive)
        megabytes = run.archive.stat().st_size / 2**20
        if megabytes > paused_runs.MAX_MB:
            run.archive.unlink()
            print(f"reproduce: not carried: {run.run_dir} at step {step} packs into "
                  f"{megabytes:.0f} MB, over {paused_runs.MAX_MB} MB")
            continue
        print(f"reproduce: packed {run.run_dir} at step {step} into {run.archive}")


def recorded_runs(suite, results=RESULTS):
    """The (task, mechanism, seed) of the suite's rows in results.json."""
    return {(r["task"], r["mechanism"], r["seed"]) for r in read_results(results)
            if r["suite"] == suite.name}


def show_plan(suite, runs):
    recorded = recorded_runs(suite)
    for run in runs:
        state = run.state()
        shown = "recorded" if state == "new" and run.key in recorded else state
        print(f"{shown:12s} {run.command}")


def numbers(text, what):
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise cli.UsageError(f"--{what} {text!r} is not a list of numbers", "e.g. 0,1,2",
                             f"fix --{what}") from None


def parse_args(argv):
    parser = cli.ArgumentParser(prog="python -m arena_tf.reproduce", description=__doc__.splitlines()[0])
    parser.add_argument("suite", help="a suite of configs/suites/, 'report', 'merge' or 'pack'")
    parser.add_argument("files", nargs="*", help="with merge: results.json files to add rows "
                                                 "from; with pack: the suites (default: all)")
    parser.add_argument("--mechanisms", help="comma-separated subset of the suite's mechanisms")
    parser.add_argument("--seeds", help="comma-separated seeds (default: the suite's)")
    parser.add_argument("--tasks", help="comma-separated subset of the suite's tasks")
    parser.add_argument("--resume", action="store_true", help="continue interrupted runs")
    parser.add_argument("--list", action="store_true", help="show each run's state; train nothing")
    parser.add_argument("--rerun", action="store_true",
                        help="re-run recorded rows with their own commands (runs/rerun/) and add "
                             "each result to its row's reruns")
    parser.add_argument("--time_limit", type=int, metavar="SECONDS",
                        help="stop at a checkpoint after this many seconds (e.g. a lent "
                             "machine's ten-minute command); --resume goes on")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)

    def body():
        if args.suite == "report":
            print(f"reproduce: wrote {report()}")
            return 0
        if args.suite == "pack":
            names = args.files or [path.stem for path in sorted(SUITES.glob("*.yaml"))]
            pack_unfinished([run for name in names for run in plan(load_suite(name))])
            print(f"reproduce: wrote {report()}")
            return 0
        if args.suite == "merge" or args.files:
            if args.suite != "merge" or not args.files:
                raise cli.UsageError("results files are read by `merge` alone",
                                     "python -m arena_tf.reproduce merge FILE [FILE ...]",
                                     "name the files after merge, or drop them")
            added = merge(args.files)
            print(f"reproduce: added {added} row(s) to {RESULTS}; wrote {report()}")
            return 0
        suite = load_suite(args.suite)
        runs = plan(suite, args.mechanisms and args.mechanisms.split(","),
                    args.seeds and numbers(args.seeds, "seeds"),
                    tasks=args.tasks and args.tasks.split(","))
        if args.list:
            show_plan(suite, runs)
            return 0
        if args.rerun:
            rerun_rows(suite, runs, time_limit=args.time_limit)
            return 0
        run_suite(suite, runs, args.resume, time_limit=args.time_limit)
        return 0

    return cli.run_main(body, debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
