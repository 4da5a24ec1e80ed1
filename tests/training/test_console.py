"""What the console shows: Keras's progress bar redrawn in place on a terminal, plain lines in a
log, a line at least every few seconds (steps/s and ETA while training, batches while evaluating,
the time spent while the first step compiles), and a strategy line that says when there is no GPU
or TPU."""

import io
import re
import sys

from arena_tf import progress, train
from arena_tf.distribute import describe, make_strategy
from tests.training.conftest import TINY, TRAIN, cli_args, loop, run


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_gets_a_bar_redrawn_in_place_and_notes_on_their_own_lines(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    progress = train.Progress.steps(4, enabled=True)
    for step in range(1, 5):
        progress.log(step, {"loss": 1.0 / step, "accuracy": 0.5, "steps/s": 10.0})
        if step == 2:
            progress.note("step 2: validation loss 0.5000, accuracy 0.5000")
    text = terminal.getvalue()
    assert "\r" in text and "4/4" in text
    assert "\nstep 2: validation loss 0.5000, accuracy 0.5000\n" in text
    assert text.count("\n") == 3  # before and after the note, and when the bar completes


def test_log_gets_one_plain_line_per_update():
    log = io.StringIO()
    progress = train.Progress.steps(4, enabled=True, stream=log)
    for step in (2, 4):
        progress.log(step, {"loss": 0.25, "accuracy": 0.5, "steps/s": 10.0})
    assert log.getvalue() == (
        "step 2/4: loss 0.25, accuracy 0.5, steps/s 10\n"
        "step 4/4: loss 0.25, accuracy 0.5, steps/s 10\n"
    )


def test_quiet_progress_prints_nothing(capsys):
    progress = train.Progress.steps(4, enabled=False)
    progress.log(4, {"loss": 0.25})
    progress.note("hidden")
    assert capsys.readouterr().out == ""


def test_strategy_line_states_that_no_accelerator_was_found():
    line = describe(make_strategy())
    assert (
        line
        == "default strategy with 1 replica(s) on /device:CPU:0; CPU only (no GPU or TPU found)"
    )


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def quiet_progress(total=10):
    """A Progress on a log with a hand-moved clock, a line at most every 3 s and no thread."""
    log, clock = io.StringIO(), Clock()
    return (
        train.Progress.steps(total, enabled=True, stream=log, every=3, clock=clock, thread=False),
        log,
        clock,
    )


def test_a_status_line_every_few_seconds_with_steps_per_second_and_eta():
    progress, log, clock = quiet_progress()
    progress.stepped(1)  # the compiling step: the speed is measured from its end
    clock.now = 2
    progress.stepped(2)  # 2 s without a line: nothing yet
    assert log.getvalue() == ""
    clock.now = 4
    progress.stepped(3)
    assert log.getvalue() == "step 3/10: 0.5 steps/s, ETA 14 s\n"
    clock.now = 6
    progress.log(4, {"loss": 0.25})
    assert log.getvalue().splitlines()[-1] == "step 4/10: loss 0.25, ETA 12 s"


def test_a_long_phase_is_named_with_its_time_and_batches():
    progress, log, clock = quiet_progress()
    with progress.working(
        "compiling the training step",
        announce="compiling the training step (the first step builds the graph)",
    ):
        clock.now = 5
        progress.tick()
    with progress.working("validation at step 10", of=4):
        progress.advance()
        clock.now = 9
        progress.advance()
    assert log.getvalue().splitlines() == [
        "compiling the training step (the first step builds the graph)",
        "compiling the training step: 5 s so far",
        "validation at step 10: batch 2/4, 4 s so far",
    ]


def test_durations_read_as_seconds_minutes_or_hours():
    assert [progress.duration(s) for s in (0.4, 35, 245, 7380)] == [
        "0 s",
        "35 s",
        "4 min 05 s",
        "2 h 03 min",
    ]


# TensorFlow's C++ log lines: "2026-01-01 12:00:00.000000: I tensorflow/...", absl's
# "W0000 00:00:...".
TENSORFLOW_LOG = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |[IWEF]\d{4} |WARNING: All "
    r"log messages before absl)"
)


def test_a_run_says_what_it_will_do_and_is_never_silent(listops_dir, tmp_path):
    """The command line in a log, a status line at every chance (ARENA_TF_PROGRESS_EVERY=0, so
    nothing depends on the machine's speed): the plan before the compiling step, steps/s and ETA
    while training, batches while evaluating, and no TensorFlow log on stderr."""
    code, out, err = run(
        TRAIN + cli_args(listops_dir, tmp_path, [*TINY, *loop(3, log_every=100)]),
        env={"ARENA_TF_PROGRESS_EVERY": "0", "TF_CPP_MIN_LOG_LEVEL": None},
    )
    assert code == 0, err[-3000:]
    noise = [line for line in err.splitlines() if TENSORFLOW_LOG.match(line)]
    assert not noise, noise  # (stderr may hold the data check's own progress lines)
    lines = out.splitlines()
    assert lines[0] == "loading TensorFlow"

    def first(pattern):
        found = [i for i, line in enumerate(lines) if re.match(pattern, line)]
        assert found, f"no line matches {pattern!r} in:\n{out}"
        return found[0]

    assert (
        first(r"plan: train full on listops for 3 steps of batch 32 ")
        < first(r"compiling the training step \(")
        < first(r"first step done in \d+ s$")
        < first(r"step 2/3: [\d.]+ steps/s, ETA \d+ s$")
        < first(r"validation at step 3: batch 1/4, \d+ s so far$")
        < first(r"test: batch 1, \d+ s so far$")
        < first(r"test accuracy ")
    )
    assert "\b" not in out and "\r" not in out and "\x1b" not in out
