"""A clone of the repository alone runs its tests, its README's examples and its benchmarks: nothing in it refers to a
path outside it (a user who clones memoryviz has no folder beside the checkout)."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Spelled in pieces so that this file does not name what it looks for.
_SIBLING = re.compile(r"\.\./" + r"(?!\.)[A-Za-z_]")
_OUTSIDE_NAMES = re.compile("|".join(map(re.escape, ["/work" + "/", "shared" + "/samples", '"shared"' + " /"])))


def _tracked() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [ROOT / name for name in names.decode().split("\0") if name]
    # The sample files are the libraries' own output and their generating scripts, kept verbatim: data, not code
    # the project runs.
    return [f for f in files if f.is_file() and "tests/samples/" not in f.as_posix()]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _sibling_references(text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        # Relative links inside the repository ("../static/...") stay inside it when the file is deep enough; a
        # reference to a folder beside the checkout names one of these.
        if _OUTSIDE_NAMES.search(line):
            found.append(f"{number}: {line.strip()}")
    return found


def _parents_outside(text: str, path: Path) -> list[str]:
    """``Path(__file__).resolve().parents[N]`` or ``.parent`` chains in ``text`` (the file at ``path``) that climb
    above the repository."""
    depth = len(path.relative_to(ROOT).parts) - 1  # how many folders the file is below the top
    found = []
    tree = ast.parse(text)
    for node in ast.walk(tree):
        climbed = None
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents"
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)
                and "__file__" in ast.unparse(node.value)):
            climbed = node.slice.value + 1
        elif isinstance(node, ast.Attribute) and node.attr == "parent" and "__file__" in ast.unparse(node):
            climbed = ast.unparse(node).count(".parent")
        if climbed is not None and climbed > depth + 1:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_it_refers_to_no_folder_beside_the_checkout() -> None:
    offenders = {}
    for path in _tracked():
        if path == Path(__file__).resolve():
            continue
        text = _text(path)
        if text is None:
            continue
        lines = _sibling_references(text)
        if lines:
            offenders[str(path.relative_to(ROOT))] = lines
    assert not offenders, f"files refer to paths outside the repository: {offenders}"


def test_its_python_never_climbs_above_the_repository() -> None:
    offenders = {}
    for path in _tracked():
        if path.suffix != ".py":
            continue
        lines = _parents_outside(path.read_text(encoding="utf-8"), path)
        if lines:
            offenders[str(path.relative_to(ROOT))] = lines
    assert not offenders, f"paths climb above the repository: {offenders}"


def test_the_readme_examples_name_files_of_the_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"manage\.py \w+ ((?:tests|bench|agents)/[\w./-]+)", readme))
    assert named, "the README's examples name sample files of the repository"
    missing = sorted(name for name in named if not (ROOT / name).is_file())
    assert not missing, f"the README names files the repository does not have: {missing}"
    assert not _SIBLING.search(readme.replace("](../", "")), "the README refers to a folder beside the checkout"


@pytest.mark.parametrize(
    "text, found",
    [
        ("SAMPLES = Path(__file__).resolve().parents[2] / " + '"shared"' + " / 'samples'", True),
        ("python manage.py lint ../" + "shared/samples/openai/travel.json", True),
        ("python manage.py lint tests/samples/openai/travel.json", False),
    ],
)
def test_it_recognises_a_reference_to_a_folder_beside_the_checkout(text: str, found: bool) -> None:
    # The rules above pass only because nothing matches them: they must match what such a reference looks like.
    assert bool(_sibling_references(text)) == found


def test_it_recognises_a_path_climbing_above_the_repository() -> None:
    text = (
        "from pathlib import Path\n"
        "X = Path(__file__).resolve().parents[2]\n"
        "Y = Path(__file__).resolve().parents[1]\n"
        "Z = Path(__file__).parent.parent.parent\n"
    )
    # A module in tests/ is one folder down: parents[1] is the top, parents[2] and a third .parent are beside it.
    found = _parents_outside(text, ROOT / "tests" / "example.py")
    assert [line.split(":")[0] for line in found] == ["2", "4"]
