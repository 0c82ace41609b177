"""The documentation stays true to the repository: the generated rule catalog
(docs/rules.md, README.md's block) is what the rules say, every relative link
of the Markdown pages and every docs page a rule's doc names exists (with its
anchor), and every page is in the index and the site's navigation.

Anchors are GitHub's (a heading lower-cased, punctuation dropped, spaces to
hyphens); a linked anchor must also be one mkdocs spells the same (no
doubled or trailing hyphen), so links work on a forge and on the site.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md", ROOT / "fixtures" / "README.md",
                                      ROOT / "bench" / "README.md"]

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_SIMPLE_ANCHOR = re.compile(r"^[a-z0-9_]+(-[a-z0-9_]+)*$")


def _catalog():
    spec = importlib.util.spec_from_file_location("docs_catalog", DOCS / "catalog.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _n, line in _prose(path.read_text(encoding="utf-8")):
        m = re.match(r"^#{1,6} (.+?)\s*#*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        k = seen.get(base, 0)
        seen[base] = k + 1
        out.add(base if k == 0 else f"{base}-{k}")
    return out


def _check_target(source: Path, target: str, problems: list[str], where: str) -> None:
    file_part, _, anchor = target.partition("#")
    dest = (source.parent / file_part).resolve() if file_part else source
    if not dest.exists():
        problems.append(f"{where}: `{target}` names no file")
        return
    try:
        dest.relative_to(ROOT)
    except ValueError:
        problems.append(f"{where}: `{target}` leaves the repository")
        return
    if anchor and dest.suffix == ".md":
        if anchor not in anchors(dest):
            problems.append(f"{where}: `{target}`: no heading with the anchor `#{anchor}`")
        elif not _SIMPLE_ANCHOR.match(anchor):
            problems.append(f"{where}: `{target}`: mkdocs spells this anchor otherwise; rename the heading")


def test_the_generated_catalog_is_current():
    stale = _catalog().stale()
    assert not stale, f"{[str(p.relative_to(ROOT)) for p in stale]} not current: run `python docs/catalog.py`"


def test_the_slug_is_githubs():
    assert slug('What "uniform" means') == "what-uniform-means"
    assert slug("The cp.async group queue (TL204)") == "the-cpasync-group-queue-tl204"
    assert slug("Editors: the language server") == "editors-the-language-server"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path):
    problems: list[str] = []
    for n, line in _prose(page.read_text(encoding="utf-8")):
        for target in _LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            _check_target(page, target, problems, f"{page.relative_to(ROOT)}:{n}")
    assert not problems, "\n".join(problems)


def test_the_docs_pages_the_rules_name_exist():
    from tolk_lint.catalog import all_rules

    problems: list[str] = []
    for rule in all_rules():
        refs = re.findall(r"(?<![\w/])docs/[\w-]+\.md(?:#[\w-]+)?", rule.doc())
        assert refs, f"{rule.code}'s doc links no docs page (add a `## See also` line)"
        for ref in refs:
            _check_target(ROOT / "README.md", ref, problems, rule.code)
    assert not problems, "\n".join(problems)


def test_every_page_is_in_the_index_and_the_site():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    site = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        if page.name == "README.md":
            continue
        assert f"]({page.name})" in index, f"docs/README.md does not link {page.name}"
        listed = re.search(rf":\s*{re.escape(page.name)}\s*$", site, re.MULTILINE)
        assert listed, f"mkdocs.yml's nav lacks {page.name}"


def test_the_site_builds():
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (it is optional: pip install mkdocs)")
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", out],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
