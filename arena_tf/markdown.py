"""Markdown tables for the generated reports (docs/results/efficiency/report.md, the serving bench's results.md)
and for the README's generated sections, which sit between `<!-- NAME:start ... -->` and
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
    """`text` with the lines between section `name`'s markers replaced by `body`."""
    start, end = markers(name)
    head, rest = text.split(start, 1)
    marker_line, _ = rest.split("\n", 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}{marker_line}\n{body}\n{end}{tail}"
