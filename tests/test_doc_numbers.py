"""The numbers the reproduction prose quotes are recorded: every accuracy with a decimal point in
the README, the reproduction and analysis guides and archive/README.md is a value of results.json (a
row's test, best validation or final training accuracy, its test split's majority class share, or a
point of its validation curve), a suite's target or paper number, or a line of
distance-baselines.txt; every "X% test" is a row's (or a re-run's) test accuracy; every "X% at step
N" is a point (N, X) of some row's validation curve; every "N min" of training is some row's
training time. Where a mechanism's name comes before such a quote in its paragraph (or bullet, or
table row, or a bullet it is nested under), the nearest one names the row, in any case: "local 63.3%
test" (or "Local attention: 63.3% test") must be local's number."""

import json
import pathlib
import re

import yaml

from arena_tf import layers
from arena_tf.reproduce import results, suites

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROSE = [
    ROOT / "README.md",
    ROOT / "docs" / "guide" / "reproduction.md",
    ROOT / "docs" / "guide" / "analysis.md",
    ROOT / "archive" / "README.md",
]
DISTANCE_BASELINES = results.RESULTS.parent / "distance-baselines.txt"

PERCENT = re.compile(r"(?<![\d.])(\d+\.\d+)%")
AT_STEP = re.compile(r"(\d+\.\d+)% at (?:step )?(\d[\d,]*)")
TEST = re.compile(r"(?<![\d.])(\d+\.\d+)% test\b")
MINUTES = re.compile(r"(?<![\d.,])(\d[\d,]*) min\b(?! \d+ s)")  # "1 min 45 s" is a command's timing
MECHANISM = re.compile(
    r"\b(" + "|".join(map(re.escape, layers.available())) + r")\b", re.IGNORECASE
)  # "BigBird" and "Full attention" name rows too
PARAGRAPH = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*|]|\d+\.) )")  # a blank line, a bullet or table row


def percents(value):
    """A fraction as the prose may quote it: to one or two decimals of a percent."""
    return {round(100 * value, 1), round(100 * value, 2)}


def numbers(paper):
    """The numbers of a suite's paper table, per mechanism or per task and mechanism."""
    if isinstance(paper, dict):
        return {number for value in paper.values() for number in numbers(value)}
    return {float(paper)}


def holds(record, keys, mechanism):
    """Add `mechanism` to each of `keys` in `record` ({value: mechanisms})."""
    for key in keys:
        record.setdefault(key, set()).add(mechanism)


def recorded(rows, suite_files, baselines_text):
    """(percentages, test accuracies, validation points (step, percent), training minutes) the
    records hold; the last three as {value: the mechanisms whose rows hold it}; a row's re-runs
    count as rows."""
    values, tests, points, minutes = set(), {}, {}, {}
    for row in rows:
        mechanism = row.get("mechanism")
        for entry in (row, *row.get("reruns", ())):
            if entry.get("test_accuracy") is not None:
                holds(tests, percents(entry["test_accuracy"]), mechanism)
            for key in ("test_accuracy", "best_val_accuracy", "final_train_accuracy", "chance"):
                if entry.get(key) is not None:
                    values |= percents(entry[key])
            for step, accuracy in entry.get("validation_curve", []):
                values |= percents(accuracy)
                holds(points, {(step, percent) for percent in percents(accuracy)}, mechanism)
            if entry.get("train_seconds"):
                holds(minutes, {round(entry["train_seconds"] / 60)}, mechanism)
    for path in suite_files:
        suite = yaml.safe_load(path.read_text())
        values |= {
            float(suite.get("target") or 0),
            *numbers(suite.get("paper") or {}),
            *numbers(suite.get("target_per_mechanism") or {}),
        }
    values |= {float(number) for number in PERCENT.findall(baselines_text)}
    return values, tests, points, minutes


def held(record, key, before):
    """Whether `record` ({value: mechanisms}) holds `key` for the mechanism named last in `before`
    (the text that precedes the quote); any mechanism's where none is named."""
    named = MECHANISM.findall(before)
    mechanisms = record.get(key, set())
    return named[-1].lower() in mechanisms if named else bool(mechanisms)


def paragraphs(text):
    """(context, paragraph) for each paragraph, bullet or table row of `text`: the context is the
    text of the bullets it is nested in (indented under), so that a sub-bullet's quote belongs to
    the mechanism its parent names."""
    parents = []  # (indent, text) of the bullets open above
    for piece in PARAGRAPH.split(text):
        indent = len(piece) - len(piece.lstrip(" "))
        while parents and parents[-1][0] >= indent:
            parents.pop()
        paragraph = " ".join(piece.split())  # a quote may break across lines
        yield " ".join(parent for _, parent in parents), paragraph
        if paragraph.startswith(("- ", "* ")):
            parents.append((indent, paragraph))


def unrecorded(text, values, tests, points, minutes):
    """The quotes of `text` that no record holds, as readable strings."""
    problems = []
    for context, paragraph in paragraphs(text):

        def before(match):  # the quote's paragraph up to it, after the bullets it is nested in
            return f"{context} {paragraph[: match.start()]}"

        problems += [
            f"{number}%" for number in PERCENT.findall(paragraph) if float(number) not in values
        ]
        problems += [
            f"{match[1]}% test"
            for match in TEST.finditer(paragraph)
            if not held(tests, float(match[1]), before(match))
        ]
        problems += [
            f"{match[1]}% at step {match[2]}"
            for match in AT_STEP.finditer(paragraph)
            if not held(points, (int(match[2].replace(",", "")), float(match[1])), before(match))
        ]
        problems += [
            f"{match[1]} min"
            for match in MINUTES.finditer(paragraph)
            if not held(minutes, int(match[1].replace(",", "")), before(match))
        ]
    return problems


def the_records():
    suite_files = suites.suite_paths().values()  # the archived ones too
    return recorded(results.read_results(), suite_files, DISTANCE_BASELINES.read_text())


def test_the_reproduction_prose_quotes_only_recorded_numbers():
    records = the_records()
    for page in PROSE:
        assert unrecorded(page.read_text(), *records) == [], page.relative_to(ROOT)


def test_a_number_no_record_holds_is_found():
    row = {
        "mechanism": "full",
        "test_accuracy": 0.729,
        "best_val_accuracy": 0.752,
        "train_seconds": 6600,
        "validation_curve": [[2500, 0.689], [3000, 0.7]],
    }
    other = {"mechanism": "local", "test_accuracy": 0.633, "train_seconds": 2400}
    records = recorded([row, other], [], "scores 70.6% on the test split")
    fine = (
        "full ended at 72.9% test (best validation 75.2%; 110 min), 68.9% at step 2,500; "
        "70.6%; local 63.3% test (40 min)\n\n72.9% test\n- full:\n  - 72.9% test\n- local:\n"
        "  - 63.3% test"
    )
    assert unrecorded(fine, *records) == []
    wrong = (
        "full ended at 72.8% test, validation 68.9% at 3,000 and 70.0% at\nstep 2500; 111 min;"
        " 75.2% test; 1,110 min; 63.3% test (40 min)\n- local 72.9% test, 68.9% at step "
        "2,500 (110 min)\n- Local attention: 72.9% test\n- local:\n  - 72.9% test"
    )
    assert unrecorded(wrong, *records) == [
        "72.8%",
        "72.8% test",
        "75.2% test",
        "63.3% test",
        "68.9% at step 3,000",
        "70.0% at step 2500",
        "111 min",
        "1,110 min",
        "40 min",
        "72.9% test",
        "68.9% at step 2,500",
        "110 min",
        "72.9% test",
        "72.9% test",
    ]


def test_the_suites_and_baselines_it_reads_exist():
    values, tests, points, minutes = the_records()
    assert tests and points and minutes and 55.3 in values  # the intermediate split's distance rule
    assert json.loads(results.RESULTS.read_text())
