"""Markdown tables for the generated reports (docs/results/efficiency/report.md, the serving bench's
results.md) and for the README's generated sections, which sit between `<!-- NAME:start ... -->` and
`<!-- NAME:end -->` markers."""


def table(header, rows):
    """A Markdown table: the header, its rule, one line per row (cells shown with str)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def markers(name):
    """The start (a prefix: its line may go on with a note) and end markers of section `name`."""
    return f"<!-- {name}:start", f"<!-- {name}:end -->"


def replace_section(text, name, body):
    """`text` with the lines between section `name`'s markers replaced by `body`; a ValueError
    when `text` lacks either marker (or has the end before the start)."""
    start, end = markers(name)
    head, found, rest = text.partition(start)
    marker_line, newline, _ = rest.partition("\n")
    if not found or not newline or end not in rest:
        raise ValueError(
            f"no section {name}: it needs a line starting {start} and a later line {end}"
        )
    _, tail = rest.split(end, 1)
    return f"{head}{start}{marker_line}\n{body}\n{end}{tail}"
