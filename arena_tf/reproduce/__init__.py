"""Reproduction suites: named sets of training runs, and the report that puts them beside the paper.

    python -m arena_tf.reproduce cpu-listops [--mechanisms full,linear] [--seeds 0,1,2] [--resume]
    python -m arena_tf.reproduce cpu-listops --list      # what is done, interrupted, to run
    python -m arena_tf.reproduce report                  # docs/results/reproduction/report.md
    python -m arena_tf.reproduce merge FILE [FILE ...]   # add the rows another machine recorded
    python -m arena_tf.reproduce pack [SUITE ...]        # carry unfinished runs in the repository

A suite is a small YAML file in configs/suites/ (archive/suites/ for past recipe searches; task,
preset, mechanisms, seeds, the paper's numbers), not code. Each run is one
`python -m arena_tf.train` command with its own run directory under runs/reproduce/SUITE/; that
exact command is stored with its result, so any row can be re-run by hand. A finished run
(metrics.json written) is skipped; an interrupted one (checkpoints, no metrics.json) continues from
its newest checkpoint with --resume and is refused without it (so that a half-finished run is never
mistaken for a new one). After every run its row goes into docs/results/reproduction/results.json
(written atomically); `report` regenerates the report from that file alone, so every number of it
comes from a run of its own command. `pack` puts each unfinished run's newest checkpoint under
docs/results/reproduction/paused/ (paused_runs.py), so that a run outlives the machine it started
on: --resume on another checkout goes on from there.

Modules: suites.py (the suite files and their runs), results.py (results.json), report.py (the
report and the README's summary), running.py (training, re-running and packing runs), reruns.py,
paused_runs.py, and __main__.py (the command line).
"""
