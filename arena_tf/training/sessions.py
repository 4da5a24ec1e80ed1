"""The sessions of a training run and the device each trained on.

A run resumed on another machine (a later session's CPU, a GPU machine) trained on more than one
device; its metrics.json, and so its results.json row, name each with the steps it trained:

    CPU: AMD EPYC (...), 2 cores (steps 0-8,000), then CPU: Intel(R) Xeon(R) (...), 2 cores
    (steps 8,000-10,000)

Each session writes its device into the run's TensorBoard events (the text `device`, at the step it
starts from: TensorBoard's text dashboard lists them); a resumed session reads the earlier ones
back. Steps trained before the first recorded session (a run begun before devices were recorded)
are named 'unrecorded'.
"""

from arena_tf.training import events

TAG = "device"
UNRECORDED = "unrecorded"


def record(writer, start, device):
    """Write this session's device at the step it starts from."""
    writer.text(
        start,
        TAG,
        device,
        description="the device the run trained on from this step (one per session)",
    )


def earlier(run_dir, start):
    """[(step, device)] of the sessions of `run_dir` that began before `start`, in step order (a
    session that began at the same step and died before a checkpoint is replaced)."""
    return sorted(
        (step, device) for step, device in events.read_texts(run_dir, TAG).items() if step < start
    )


def described(sessions, steps):
    """The device of a run of `steps` steps whose `sessions` ([(start step, device)]) trained it:
    one name, or each device with its steps where they differ."""
    sessions = [s for s in sessions if s[0] < steps] or sessions[-1:]  # drop evaluation-only ones
    if sessions[0][0] > 0:
        sessions = [(0, UNRECORDED), *sessions]
    spans = [s for i, s in enumerate(sessions) if i == 0 or sessions[i - 1][1] != s[1]]
    if len(spans) == 1:
        return spans[0][1]
    ends = [step for step, _ in spans[1:]] + [steps]
    return ", then ".join(
        f"{device} (steps {start:,}-{end:,})" for (start, device), end in zip(spans, ends)
    )
