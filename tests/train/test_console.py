"""What the console shows: Keras's progress bar redrawn in place on a terminal, plain lines in a
log, and a strategy line that says when there is no GPU or TPU."""

import io
import sys

from arena_tf import train
from arena_tf.distribute import describe, make_strategy


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_gets_a_bar_redrawn_in_place_and_notes_on_their_own_lines(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    progress = train.Progress(4, enabled=True)
    for step in range(1, 5):
        progress.update(step, {"loss": 1.0 / step, "accuracy": 0.5, "steps/s": 10.0})
        if step == 2:
            progress.note("step 2: validation loss 0.5000, accuracy 0.5000")
    text = terminal.getvalue()
    assert "\r" in text and "4/4" in text
    assert "\nstep 2: validation loss 0.5000, accuracy 0.5000\n" in text
    assert text.count("\n") == 3  # before and after the note, and when the bar completes


def test_log_gets_one_plain_line_per_update():
    log = io.StringIO()
    progress = train.Progress(4, enabled=True, stream=log)
    for step in (2, 4):
        progress.update(step, {"loss": 0.25, "accuracy": 0.5, "steps/s": 10.0})
    assert log.getvalue() == ("step 2/4: loss 0.25, accuracy 0.5, steps/s 10\n"
                              "step 4/4: loss 0.25, accuracy 0.5, steps/s 10\n")


def test_quiet_progress_prints_nothing(capsys):
    progress = train.Progress(4, enabled=False)
    progress.update(4, {"loss": 0.25})
    progress.note("hidden")
    assert capsys.readouterr().out == ""


def test_strategy_line_states_that_no_accelerator_was_found():
    line = describe(make_strategy())
    assert line == "default strategy with 1 replica(s) on /device:CPU:0; CPU only (no GPU or TPU found)"
