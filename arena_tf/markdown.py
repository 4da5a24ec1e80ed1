"""Markdown tables for the generated reports (docs/efficiency.md, the serving bench's results.md)."""


def table(header, rows):
    """A Markdown table: the header, its rule, one line per row (cells shown with str)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
