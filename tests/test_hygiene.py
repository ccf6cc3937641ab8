"""Rules that keep the code in shape: the core imports no Django, no import cycle, no test module imports another."""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_it_imports_every_module_of_the_core_without_django() -> None:
    # Every module under agents/memory, found by walking the package: a new one is covered the day it is added.
    code = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        import agents.memory as core
        names = [m.name for m in pkgutil.walk_packages(core.__path__, "agents.memory.")]
        for name in names:
            importlib.import_module(name)
        assert {"agents.memory.trimming.spec", "agents.memory.formats.native"} <= set(names), names
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("django", "rest_framework"))
        assert not loaded, loaded
        print(len(names))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 30  # trimming and formats included


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports, wherever in the file (a function-level import is how a cycle
    hides), except under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name in known}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph`` (a name -> the names it imports), each as the path that closes it."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(graph.get(name, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return cycles


def test_it_has_no_import_cycle_in_the_app() -> None:
    files = [p for p in (ROOT / "agents").rglob("*.py") if "migrations" not in p.parts]
    known = {_module_name(p) for p in files}
    graph = {_module_name(p): _imports(p, known) for p in files}
    # A package's __init__ importing its own modules is how a package is made, not a cycle.
    for name in graph:
        graph[name] = {
            m for m in graph[name] if m != name and not (m.startswith(name + ".") or name.startswith(m + "."))
        }
    cycles = _cycles(graph)
    assert cycles == []


def test_it_has_no_test_module_that_imports_another() -> None:
    # Shared test data lives in non-test modules (tests/conversations.py, tests/strategies_messages.py, ...) or in
    # fixtures: importing a test module runs its tests' module-level setup and collects them twice.
    offenders: list[str] = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[-1].startswith("test_")]
    assert offenders == []


def test_it_has_no_template_comment_that_spans_lines() -> None:
    # Django's {# ... #} ends on its own line; one that spans lines is printed on the page as text (base.html's was,
    # on top of every page). Longer comments use {% comment %}.
    spanning = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "{#" in line and "#}" not in line.split("{#", 1)[1]
    ]
    assert not spanning, spanning


def test_the_database_pass_keeps_every_test_that_reaches_the_database() -> None:
    # CI's PostgreSQL pass runs with --database-tests-only: a test that reaches the database through any fixture
    # (db directly, a fixture built on it, live_server for the browser) must stay in it; a pure one is deselected.
    files = ["tests/test_seed_demo.py", "tests/test_import_hidden.py", "tests/browser/test_security_in_browser.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--database-tests-only",
         *files],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    kept = {line.split("::")[1].split("[")[0] for line in done.stdout.splitlines() if "::" in line}
    assert "test_it_is_idempotent" in kept  # asks for db
    assert "test_it_searches_message_content_in_the_admin" in kept  # db through make_session and admin_client
    assert "test_a_killed_import_leaves_no_visible_row_and_cleanup_removes_it" in kept  # its own database_url
    assert "test_it_refuses_a_script_that_got_into_the_page" in kept  # live_server
    assert "test_it_generates_the_same_conversations_from_the_same_seed" not in kept  # pure
    assert "deselected" in done.stdout.splitlines()[-1]


def _shell_graph() -> dict[str, set[str]]:
    """The shell's modules (agents/, the core and the migrations aside) and the shell modules each imports."""
    files = [p for p in (ROOT / "agents").rglob("*.py") if not {"migrations", "memory"} & set(p.parts)]
    known = {_module_name(p) for p in files} - {"agents"}  # the app's package itself: `from agents import models`
    return {_module_name(p): _imports(p, known) for p in files if _module_name(p) in known}


def _capability(module: str) -> str:
    """The package a module of the shell belongs to (agents.lab.pages -> agents.lab), or the module itself when it
    sits at the top of the app (agents.access)."""
    return ".".join(module.split(".")[:2])


def test_no_capability_imports_another_ones_views() -> None:
    # A view renders; what it shows is decided by its capability's services, which the other capabilities and the
    # API call. Only the URLs name views.
    offenders = sorted(
        f"{module} imports {name}"
        for module, names in _shell_graph().items()
        for name in names
        if name.rpartition(".")[2] == "views" and module != "agents.urls" and _capability(name) != _capability(module)
    )
    assert offenders == []


def test_the_capabilities_scope_through_access_and_import_each_other_one_way() -> None:
    # Every capability package (sessions, lab, transfer, ...) may use access.py and the ones below it, never the
    # ones that use it: a circle between two packages means their pages and services are tangled again.
    graph: dict[str, set[str]] = {}
    for module, names in _shell_graph().items():
        graph.setdefault(_capability(module), set()).update(
            _capability(n) for n in names if _capability(n) != _capability(module))
    assert "agents.access" in graph and graph["agents.access"] <= {"agents.models"}, graph.get("agents.access")
    cycles = _cycles(graph)
    assert cycles == []
    # Scoping by project and role is access.py's alone: no capability filters by membership itself.
    own_scoping = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "agents").rglob("*.py")
        if not {"migrations", "memory"} & set(p.parts) and p.name not in ("access.py", "models.py", "admin.py")
        and "memberships__user" in p.read_text(encoding="utf-8")
    )
    assert own_scoping == []
