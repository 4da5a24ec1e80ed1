"""Write an artifact, check it, and only then put it in place: a failed check replaces nothing.

    report = publish(run_dir / "model.onnx", write=save_onnx, check=check_onnx)
    report["passed"]                           # False: not written, see report["failed_report"]

    reports = publish_all({path: export_one, ...})   # every one tried, each judged on its own
    require_fp32(reports, fp32_paths)                # ParityError when an FP32 artifact failed

`write(tmp_path)` creates the artifact at a temporary path beside the target; `check(tmp_path)`
returns its parity report. When the report passes, the artifact replaces the target at once
(`arena_tf.files.atomic_path`) and its report `<artifact>.parity.json` after it (the report is
written before the artifact moves in: a report that cannot be written stops both); when it
fails, the temporary artifact is deleted, the previous artifact (if any) stays, and the report
goes to `<artifact>.parity.failed.json` for inspection. A failed reduced precision (bf16, fp16)
does not stop the others: the exports write FP32 and every reduced precision that passes.
"""

import pathlib
import time

from arena_tf import cli, files
from arena_tf.export.contract import ALL_ARTIFACTS, FILE_ARTIFACTS
from arena_tf.export.errors import ParityError
from arena_tf.export.parity import failure_line


def parity_path(artifact):
    """`<artifact>.parity.json` beside the artifact."""
    artifact = pathlib.Path(artifact)
    return artifact.with_name(f"{artifact.name}.parity.json")


def failed_parity_path(artifact):
    """Where the report of a failed check goes (the artifact itself is not replaced)."""
    artifact = pathlib.Path(artifact)
    return artifact.with_name(f"{artifact.name}.parity.failed.json")


def clean_leftovers(directory):
    """Remove the temporaries that killed exports left beside the artifacts (and their reports)
    in `directory`; the removed paths. Temporaries of exports still running are kept."""
    removed = []
    for name in ALL_ARTIFACTS:
        target = pathlib.Path(directory) / name
        for path in (target, parity_path(target), failed_parity_path(target)):
            removed += files.remove_stale_temporaries(path)
    return removed


class _Rejected(Exception):
    """The artifact failed its check: leave atomic_path without moving it in."""


def check_places(target):
    """A one-line UsageError, before the work of writing, when a file stands where the artifact
    folder `target` goes (or a folder where its file or its parity reports go). `publish_all`
    checks its targets; a caller publishing one alone checks it first."""
    cli.place_for(target, folder=target.name not in FILE_ARTIFACTS)
    for report in (parity_path(target), failed_parity_path(target)):
        cli.place_for(report, folder=False)


def publish(target, write, check, prior_seconds=0.0):
    """Create `target` through `write`, check it with `check`, replace atomically on success;
    the parity report (its `passed` says whether `target` was written).

    `prior_seconds`: time already spent making the artifact (a conversion shared by several),
    counted in the report's `export_seconds`."""
    target = pathlib.Path(target)
    started = time.perf_counter() - prior_seconds
    try:  # the report is written before the artifact moves in, and moves in after it
        with files.atomic_path(parity_path(target)) as report_tmp, files.atomic_path(target) as tmp:
            write(tmp)
            written = time.perf_counter()
            report = check(tmp)
            report.update(
                artifact=str(target),
                export_seconds=round(written - started, 3),
                check_seconds=round(time.perf_counter() - written, 3),
            )
            if not report["passed"]:
                raise _Rejected()  # leaving the block by an exception deletes the temporaries
            report_tmp.write_text(files.json_text(report))  # a full disk stops both here
    except _Rejected:
        report["failed_report"] = str(failed_parity_path(target))
        files.write_json(failed_parity_path(target), report)
        return report
    failed_parity_path(target).unlink(missing_ok=True)
    return report


def publish_all(exports):
    """Run every export in {artifact path: () -> report}; {artifact path: report}, failed ones
    included (report["passed"] is False). Every artifact's place is checked first."""
    for artifact in exports:
        check_places(pathlib.Path(artifact))
    return {artifact: export() for artifact, export in exports.items()}


def refusal_line(report):
    """One line saying why an artifact was not written and where the details are."""
    name = pathlib.Path(report["artifact"]).name
    return (
        f"{name} not written: parity check failed ({failure_line(report)}), details in "
        f"{report['failed_report']}"
    )


def require_fp32(reports, fp32_artifacts):
    """`reports` when every FP32 artifact among them passed; a ParityError otherwise (an FP32
    artifact that disagrees with Keras means the export itself is wrong)."""
    failed = [reports[a] for a in fp32_artifacts if a in reports and not reports[a]["passed"]]
    if failed:
        raise ParityError(
            " | ".join(refusal_line(report) for report in failed),
            expected="FP32 logits within the parity threshold of the Keras model",
            fix="report the mechanism and the details file as a bug",
            reports=reports,
        )
    return reports
