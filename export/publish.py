"""Write an artifact, check it, and only then put it in place: a failed export replaces nothing.

    report = publish(run_dir / "model.onnx", write=save_onnx, check=check_onnx)

    reports = publish_all({path: export_one, ...})   # all tried; one ParityError lists failures

`write(tmp_path)` creates the artifact at a temporary path beside the target; `check(tmp_path)`
returns its parity report. When the report passes, the artifact replaces the target at once
(`arena_tf.files.atomic_path`) and the report is written as `<artifact>.parity.json`; when it
fails, the temporary artifact is deleted, the report goes to `<artifact>.parity.failed.json`
for inspection and a ParityError carries one line (failures of several artifacts joined by |).
"""

import pathlib
import time

from arena_tf import files
from export.errors import ParityError
from export.parity import failure_line


def parity_path(artifact):
    """`<artifact>.parity.json` beside the artifact."""
    artifact = pathlib.Path(artifact)
    return artifact.with_name(f"{artifact.name}.parity.json")


def failed_parity_path(artifact):
    """Where the report of a failed check goes (the artifact itself is not replaced)."""
    artifact = pathlib.Path(artifact)
    return artifact.with_name(f"{artifact.name}.parity.failed.json")


def publish(target, write, check, prior_seconds=0.0):
    """Create `target` through `write`, check it with `check`, replace atomically on success.

    `prior_seconds`: time already spent making the artifact (a conversion shared by several),
    counted in the report's `export_seconds`."""
    target = pathlib.Path(target)
    started = time.perf_counter() - prior_seconds
    with files.atomic_path(target) as tmp:
        write(tmp)
        written = time.perf_counter()
        report = check(tmp)
        report.update(artifact=str(target), export_seconds=round(written - started, 3),
                      check_seconds=round(time.perf_counter() - written, 3))
        if not report["passed"]:
            files.write_json(failed_parity_path(target), report)
            raise ParityError(
                f"{target.name} failed its parity check: {failure_line(report)}; nothing was "
                f"replaced; details in {failed_parity_path(target)}"
            )
    files.write_json(parity_path(target), report)
    failed_parity_path(target).unlink(missing_ok=True)
    return report


def publish_all(exports):
    """Run every export in {artifact path: () -> report}, even after one fails its check; the
    reports, or a ParityError naming every failure (holding the reports of the others)."""
    reports, failures = {}, []
    for artifact, export in exports.items():
        try:
            reports[artifact] = export()
        except ParityError as error:
            failures.append(str(error))
    if failures:
        raise ParityError(" | ".join(failures), published=reports)
    return reports
