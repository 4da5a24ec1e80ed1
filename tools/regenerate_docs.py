"""Regenerate the documentation's generated parts from the results and the registry.

    make docs                                  # = python tools/regenerate_docs.py
    python tools/regenerate_docs.py --check    # exit 1 naming every generated part out of date

The library never writes into the repository by itself: training records a row in
docs/results/reproduction/results.json and stops there. This command (run by hand, and in
--check form by tests/test_docs.py) rewrites what is generated from those files:

- docs/results/reproduction/report.md and its learning-curve PNGs, from results.json;
- the README's headline results (between its `results` markers), from results.json;
- arena_tf/layers/README.md's catalogue, from the layer registry;
- the measured presets table of docs/guide/training-and-configs.md, from docs/results/presets.json;
- docs/results/serving/results.md, results.csv and its charts, from its results.jsonl (the same
  as `python -m serving.report docs/results/serving`), and the summary of that run in
  docs/guide/serving-and-pentathlon.md.

The efficiency report (docs/results/efficiency/report.md) has its own command, `python -m
arena_tf.benchmark report`, since it draws many plots from several result files.
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena_tf import cli  # noqa: E402 (after the path above)

cli.prepare_process()  # before TensorFlow and Keras are imported

from arena_tf import catalogue, files, preset_timing  # noqa: E402
from arena_tf.markdown import replace_section  # noqa: E402
from arena_tf.reproduce import report  # noqa: E402
from arena_tf.reproduce.results import RESULTS, read_results  # noqa: E402
from arena_tf.serving import report as serving_report  # noqa: E402

README = ROOT / "README.md"
CATALOGUE = ROOT / "arena_tf" / "layers" / "README.md"
TRAINING_GUIDE = ROOT / "docs" / "guide" / "training-and-configs.md"
PRESET_TIMES = ROOT / "docs" / "results" / "presets.json"
SERVING = ROOT / "docs" / "results" / "serving"
SERVING_GUIDE = ROOT / "docs" / "guide" / "serving-and-pentathlon.md"


def presets_table(text):
    """`text` with its `presets` section holding the table of docs/results/presets.json."""
    try:
        table = preset_timing.markdown_table(json.loads(PRESET_TIMES.read_text()))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(
            f"{shown(PRESET_TIMES)} is not the measurements preset_timing writes "
            f"({type(error).__name__}: {str(error)[:80]})"
        ) from None
    return replace_section(text, preset_timing.SECTION, table)


def serving_summary(text):
    """`text` with its serving summary section holding the summary of docs/results/serving."""
    rows = serving_report.read_rows(SERVING)
    return replace_section(text, serving_report.SUMMARY_SECTION, serving_report.summary(rows))


def generated(plots=False):
    """{path: the text it should hold} of every generated page or section (with `plots`, the
    reproduction report's PNGs are drawn too; the serving charts are drawn by `main`); a
    ValueError naming the page when a source or the page cannot make it."""
    rows = read_results(RESULTS)
    return {
        report.REPORT: report.render(RESULTS, report.REPORT, plots=plots),
        README: within(README, lambda text: report.with_summary(text, rows)),
        CATALOGUE: within(CATALOGUE, catalogue.with_table),
        TRAINING_GUIDE: within(TRAINING_GUIDE, presets_table),
        **serving_report.regenerated(SERVING),  # results.md and results.csv
        SERVING_GUIDE: within(SERVING_GUIDE, serving_summary),
    }


def within(page, change):
    """`change(page's text)`, a ValueError naming `page` when it fails."""
    try:
        return change(page.read_text())
    except ValueError as error:
        raise ValueError(f"{shown(page)}: {error}") from None


def shown(path):
    """`path` as the messages name it: from the repository's root."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def stale():
    """The generated files whose text differs from what this command would write."""
    return [
        path for path, text in generated().items() if not path.is_file() or path.read_text() != text
    ]


def main(argv=None):
    parser = cli.ArgumentParser(
        prog="python tools/regenerate_docs.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when a generated part is out of date",
    )
    args = parser.parse_args(argv)

    def body():
        if args.check:
            old = stale()
            if old:
                names = ", ".join(str(path.relative_to(ROOT)) for path in old)
                raise cli.RunError(
                    f"out of date: {names}",
                    "generated docs matching their sources",
                    "run `make docs` and commit the result",
                )
            print("regenerate_docs: every generated part is current")
            return 0
        generated()  # every source and page checked before anything is written
        for path, text in generated(plots=True).items():
            files.write_text(path, text)
            print(f"regenerate_docs: wrote {path.relative_to(ROOT)}")
        for path in serving_report.draw_plots(SERVING):
            print(f"regenerate_docs: wrote {path.relative_to(ROOT)}")
        return 0

    return cli.run_main(lambda: refusing_bad_sources(body), debug=args.debug)


def refusing_bad_sources(body):
    """`body()`, a ValueError of a damaged source or page as one line (exit 2)."""
    try:
        return body()
    except ValueError as error:
        raise cli.UsageError(
            str(error),
            "the sources and pages as committed",
            "restore the file named (git checkout -- PATH) or mend it",
        ) from None


if __name__ == "__main__":
    sys.exit(main())
