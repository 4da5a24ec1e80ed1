"""The documentation holds together: every link in the README, the guides, the results and the
per-folder READMEs leads to a file of the repository (and a heading of it, where it names one),
docs/README.md indexes every page under docs/, and the generated parts are what `make docs` would
write from their sources now."""

import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import regenerate_docs  # noqa: E402 (from tools/, above)

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)


def pages():
    """Every Markdown page a reader follows links through."""
    found = [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "archive" / "README.md",
        ROOT / "arena_tf" / "layers" / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]
    return [page for page in found if page.is_file()]


def links(page):
    """The link targets of `page`, code blocks left out."""
    text = FENCE.sub("", page.read_text())
    return [
        target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)
    ]  # https:, mailto: ... are outside the repository


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page):
    return {
        slug(line.lstrip("#"))
        for line in FENCE.sub("", page.read_text()).splitlines()
        if line.startswith("#")
    }


def broken(page, target):
    """Why `target` (a link of `page`) leads nowhere, or None."""
    name, _, anchor = target.partition("#")
    path = (page.parent / name).resolve() if name else page
    if not path.exists():
        return "no such file"
    if ROOT not in path.parents and path != ROOT:
        return "outside the repository"
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        return f"no heading #{anchor}"
    return None


def test_every_link_leads_to_a_file_of_the_repository():
    bad = [
        f"{page.relative_to(ROOT)}: {target} ({why})"
        for page in pages()
        for target in links(page)
        if (why := broken(page, target))
    ]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_docs_readme_indexes_every_page_under_docs():
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in links(index)}
    unlisted = [
        str(page.relative_to(ROOT))
        for page in (ROOT / "docs").rglob("*.md")
        if page != index and page.resolve() not in linked
    ]
    assert not unlisted, f"pages docs/README.md does not link: {unlisted}"


def test_the_link_check_finds_what_is_broken(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text(
        "# A title\n\n[ok](#a-title) [gone](missing.md) [bad](#nowhere) "
        "[web](https://example.org)\n```\n[in code](not-checked.md)\n```\n"
    )
    assert links(page) == ["#a-title", "missing.md", "#nowhere"]
    assert [broken(page, target) for target in links(page)] == [
        None,
        "no such file",
        "no heading #nowhere",
    ]


def test_the_generated_docs_are_current():
    """The reproduction report, the README's results, the catalogue and the presets table are those
    their sources give now; `make docs` rewrites them."""
    assert regenerate_docs.stale() == [], "run `make docs` and commit the result"


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("presets", "is not the measurements preset_timing writes (JSONDecodeError"),
        ("markers", "training-and-configs.md: no section presets: it needs a line starting"),
    ],
)
def test_a_damaged_source_or_page_is_one_line_and_nothing_is_written(
    tmp_path, monkeypatch, capsys, damage, expected
):
    presets, guide = tmp_path / "presets.json", tmp_path / "training-and-configs.md"
    presets.write_text(
        regenerate_docs.PRESET_TIMES.read_text()[:100]
        if damage == "presets"
        else regenerate_docs.PRESET_TIMES.read_text()
    )
    text = regenerate_docs.TRAINING_GUIDE.read_text()
    guide.write_text(text.replace("<!-- presets:end -->", "") if damage == "markers" else text)
    monkeypatch.setattr(regenerate_docs, "PRESET_TIMES", presets)
    monkeypatch.setattr(regenerate_docs, "TRAINING_GUIDE", guide)
    written = []
    monkeypatch.setattr(regenerate_docs.files, "write_text", lambda *a: written.append(a))
    assert regenerate_docs.main([]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and expected in err, err
    assert written == []


def test_readme_stays_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
