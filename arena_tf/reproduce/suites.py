"""Suites: the YAML files of configs/suites/ (archive/suites/ holds past recipe searches, found
by name too) and the training runs they name.

A suite names a task (or several), a preset, the mechanisms, the seeds, the settings every run
takes (and those of single mechanisms), the target and the paper's numbers. Each of its runs is
one `python -m arena_tf.train` command with its own run directory under runs/reproduce/SUITE/.
"""

import dataclasses
import pathlib
import shlex

from arena_tf import cli
from arena_tf.config import read_yaml
from arena_tf.reproduce import paused_runs
from arena_tf.training.run_dir import checkpoint_steps

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUITES = ROOT / "configs" / "suites"
ARCHIVED = ROOT / "archive" / "suites"  # past recipe searches: still found by name, listed apart
RUNS = pathlib.Path("runs") / "reproduce"
# Settings that decide when a run logs, evaluates or checkpoints, not what it learns.
BOOKKEEPING = (
    "train.seed",
    "train.log_every",
    "train.eval_every",
    "train.eval_batches",
    "train.checkpoint_every",
)


@dataclasses.dataclass(frozen=True)
class Suite:
    """One task (`task: listops`) or several (`task: [listops, image]`: each run's directory and
    row then name the task, and `paper` gives {task: {mechanism: number}})."""

    name: str
    task: object  # a task name, or a list of them
    mechanisms: tuple
    seeds: tuple
    seeds_per_mechanism: dict
    paper: dict = dataclasses.field(default_factory=dict)  # none: no paper column in the tables
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
        return [
            f"--task={self.task_name}",
            f"--model={self.mechanism}",
            *([f"--preset={suite.preset}"] if suite.preset else []),
            *(f"--set={value}" for value in suite.overrides_of(self.mechanism)),
            f"--set=train.seed={self.seed}",
            f"--run-dir={self.run_dir}",
            *([f"--data-dir={suite.data_dir}"] if suite.data_dir else []),
        ]

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


def suite_paths(suites_dir=SUITES):
    """{name: path} of the suites in `suites_dir` and, for the repository's own folder, of the
    archived ones too (a name in both is the front one)."""
    folders = [pathlib.Path(suites_dir)]
    if folders[0] == SUITES:
        folders.insert(0, ARCHIVED)
    return {path.stem: path for folder in folders for path in sorted(folder.glob("*.yaml"))}


def load_suite(name, suites_dir=SUITES):
    path = suite_paths(suites_dir).get(name)
    if path is None:  # a name, not a path (../suites/cpu-listops)
        front = sorted(p.stem for p in pathlib.Path(suites_dir).glob("*.yaml"))
        raise cli.UsageError(
            f"unknown suite {name!r}",
            f"one of {', '.join(front)} (or an archived one), report, merge or pack",
            f"pick a suite, or add {pathlib.Path(suites_dir)}/NAME.yaml",
        )
    fields = {field.name for field in dataclasses.fields(Suite)} - {"name"}
    raw = read_yaml(path, sorted(fields))
    unknown = sorted(set(raw) - fields)
    if unknown:
        raise cli.UsageError(
            f"{path}: unknown key {unknown[0]!r}",
            f"keys among {sorted(fields)}",
            "correct the suite file",
        )
    missing = [key for key in ("task", "mechanisms") if not raw.get(key)]
    if missing:
        raise cli.UsageError(
            f"{path}: no {missing[0]!r}",
            "a suite names its task and mechanisms",
            f"add '{missing[0]}:' to the suite file",
        )
    return Suite(
        name=name,
        **{
            **raw,
            "mechanisms": tuple(raw["mechanisms"]),
            "paper": raw.get("paper") or {},
            "seeds": tuple(raw.get("seeds", (0,))),
            "seeds_per_mechanism": raw.get("seeds_per_mechanism", {}),
            "overrides": tuple(raw.get("overrides", ())),
        },
    )


def chosen(what, asked, available, suite):
    """`asked` (or all of `available`), refused in one line where it names one not available."""
    unknown = sorted(set(asked or ()) - set(available))
    if unknown:
        raise cli.UsageError(
            f"{what} {unknown[0]!r} is not in suite {suite.name}",
            f"some of {', '.join(available)}",
            f"fix --{what}s",
        )
    return asked or available


def plan(
    suite, mechanisms=None, seeds=None, runs_dir=RUNS, tasks=None, paused_dir=paused_runs.PAUSED
):
    """The suite's runs (restricted to `mechanisms`, `seeds` and `tasks` when given), in suite
    order."""
    mechanisms = chosen("mechanism", mechanisms, suite.mechanisms, suite)
    tasks = chosen("task", tasks, suite.tasks, suite)
    return [
        Run(suite, mechanism, seed, pathlib.Path(runs_dir), task, pathlib.Path(paused_dir))
        for task in suite.tasks
        if task in tasks
        for mechanism in suite.mechanisms
        if mechanism in mechanisms
        for seed in (seeds if seeds is not None else suite.seeds_of(mechanism))
    ]
