"""The docs agree with the code: every hook documented with its exact signature, and every
example on the hooks page runs."""

from __future__ import annotations

import inspect
import re
import runpy
from pathlib import Path

import pytest
from hookagent import hookspecs

ROOT = Path(__file__).resolve().parent.parent
HOOKS_DOC = (ROOT / "docs" / "hooks.md").read_text()
HOOKS = {
    n: f for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("hookagent_")
}


def documented() -> dict[str, str]:
    return dict(re.findall(r"^## `(hookagent_\w+)\(([^)]*)\)`$", HOOKS_DOC, flags=re.M))


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_hook_is_documented_with_its_exact_signature(name: str) -> None:
    docs = documented()
    assert name in docs, f"docs/hooks.md has no section headed `{name}(...)`"
    params = ", ".join(inspect.signature(HOOKS[name]).parameters)
    assert docs[name] == params, f"docs say {name}({docs[name]}), the spec is {name}({params})"
    section = HOOKS_DOC.split(f"## `{name}(")[1].split("\n## ")[0]
    assert "```python" in section, f"{name}: no runnable example"
    assert "Used by:" in section, f"{name}: does not say which plugins use it"
    for param in inspect.signature(HOOKS[name]).parameters:
        assert f"`{param}`" in section, f"{name}: parameter {param} is not described"


def test_no_documented_hook_is_missing_from_the_spec() -> None:
    assert sorted(documented()) == sorted(HOOKS)


def test_every_hookspec_has_a_docstring() -> None:
    for name, func in HOOKS.items():
        assert func.__doc__ and "Result" in func.__doc__, name


RUNNABLE_PAGES = ("hooks.md", "quickstart.md", "runs.md", "state.md", "context.md", "plan-mode.md")
RUNNABLE_PAGES += ("permissions.md",)  # hookagent-permissions
RUNNABLE_PAGES += ("compaction.md",)  # hookagent-compaction
RUNNABLE_PAGES += ("workspace.md", "memory.md")  # hookagent-workspace, hookagent-memory
RUNNABLE_PAGES += ("tasks.md",)  # hookagent-tasks
RUNNABLE_PAGES += ("session-log.md",)  # hookagent-session-log
RUNNABLE_PAGES += ("session.md",)  # hookagent-session
RUNNABLE_PAGES += ("assembling.md",)  # hookagent-harness
EXAMPLES = [
    (page, i, code)
    for page in RUNNABLE_PAGES
    for i, code in enumerate(
        re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), flags=re.S)
    )
]


@pytest.mark.parametrize(
    ("page", "index", "code"), EXAMPLES, ids=[f"{p}#{i}" for p, i, _ in EXAMPLES]
)
def test_docs_example_runs(page: str, index: int, code: str, tmp_path: Path) -> None:
    """Every python block on these pages is a complete program; it must run as shown."""
    script = tmp_path / f"{page.replace('.', '_')}_{index}.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__main__")


def test_every_hook_has_a_test_hook_function() -> None:
    sources = "".join(p.read_text() for p in (ROOT / "src").rglob("test_*.py"))
    missing = [n for n in HOOKS if f"def test_hook_{n}(" not in sources]
    assert missing == []


def test_relative_links_resolve() -> None:
    pages = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("src/plugins/*/README.md")]
    broken, checked = [], 0
    for page in pages:
        for target in re.findall(r"\]\(([\w./-]+\.\w+|[\w./-]+/)(?:#[^)]*)?\)", page.read_text()):
            checked += 1
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert checked > 30 and broken == []


REFERENCE_PAGES = sorted(
    p.relative_to(ROOT / "docs").as_posix()
    for p in (ROOT / "docs").rglob("*.md")
    if p.relative_to(ROOT / "docs").as_posix() not in RUNNABLE_PAGES
)
FRAGMENTS = [
    (page, i, code)
    for page in REFERENCE_PAGES
    for i, code in enumerate(
        re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), flags=re.S)
    )
    if not code.startswith("# From examples/")  # copies: test_docs_snippets.py checks them
]


@pytest.mark.parametrize(
    ("page", "index", "code"), FRAGMENTS, ids=[f"{p}#{i}" for p, i, _ in FRAGMENTS]
)
def test_docs_fragment_compiles_and_names_real_api(page: str, index: int, code: str) -> None:
    """Blocks on the other pages are fragments (they name servers that CI does not have),
    but each must still be valid Python and import only names that exist."""
    import ast
    import importlib

    tree = compile(
        code, f"{page}#{index}", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("hookagent"):
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert alias.name == "*" or hasattr(module, alias.name), (
                    f"{page}#{index}: {node.module} has no {alias.name}"
                )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("hookagent"):
                    importlib.import_module(alias.name)


# ---- pages whose every python block is a complete program (i14: stores, model providers)
PROGRAM_PAGES = ("stores.md", "models/writing-a-model-provider.md")
PROGRAMS = [
    (page, i, code)
    for page in PROGRAM_PAGES
    for i, code in enumerate(
        re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), flags=re.S)
    )
]


@pytest.mark.parametrize(
    ("page", "index", "code"), PROGRAMS, ids=[f"{p}#{i}" for p, i, _ in PROGRAMS]
)
def test_store_and_provider_page_examples_run(
    page: str, index: int, code: str, tmp_path: Path
) -> None:
    script = tmp_path / f"{page.replace('/', '_').replace('.', '_')}_{index}.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__main__")


def test_the_store_and_provider_pages_have_examples() -> None:
    pages = {page for page, _, _ in PROGRAMS}
    assert pages == set(PROGRAM_PAGES)
    stores = "".join(code for page, _, code in PROGRAMS if page == "stores.md")
    assert "open_store(" in stores and "open_store_sync(" in stores
    provider = "".join(code for page, _, code in PROGRAMS if page != "stores.md")
    for name in ("ModelRequest", "ModelResponse", "ModelDelta", "hookagent_register_models"):
        assert name in provider, name


def test_the_adapter_writer_gaps_stay_documented() -> None:
    """Issue 14: each gap an adapter writer hit is said where they look for it."""
    pages = ("quickstart.md", "state.md", "stores.md")
    docs = {p: " ".join((ROOT / "docs" / p).read_text().split()) for p in pages}
    assert "return value is ignored" in docs["state.md"]
    assert 'a `tool_result` without `state` is a `"success"`' in docs["state.md"]
    assert "`Tool` objects" in docs["quickstart.md"] and "Tool(" in docs["quickstart.md"]
    assert "`Agent.close()` (like `call`" in docs["quickstart.md"]
    assert "are not JSON documents" in docs["stores.md"]
    for page in ("README.md", "docs/stores.md"):
        assert "JSON files" not in (ROOT / page).read_text(), page


# --------------------------------------------------------------------------- plugin hookspecs
# A plugin that publishes hooks (a ``hookspecs.py`` of its own) is held to the core's rule:
# every hook documented on some page under docs/ with a section headed by its exact
# signature (a runnable or compiling example, "Used by:", every parameter described), and
# tested by a function named ``test_hook_<name>``.


def _plugin_hookspecs() -> dict[str, tuple[str, object]]:
    import importlib

    found: dict[str, tuple[str, object]] = {}
    for path in sorted((ROOT / "src" / "plugins").glob("*/*/hookspecs.py")):
        module = importlib.import_module(f"{path.parent.name}.hookspecs")
        where = path.relative_to(ROOT).as_posix()
        for name, func in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("hookagent_") and func.__module__ == module.__name__:
                found[name] = (where, func)
    return found


PLUGIN_HOOKS = _plugin_hookspecs()
PLUGIN_HEADING = re.compile(r"^(#{2,3}) `(hookagent_\w+)\(([^)]*)\)`$", flags=re.M)


def _plugin_hook_sections() -> dict[str, tuple[str, str, str]]:
    """hook name -> (page, documented parameters, the section's text)."""
    sections: dict[str, tuple[str, str, str]] = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if page.name == "hooks.md":
            continue  # the core's page: checked above
        text = page.read_text()
        for match in PLUGIN_HEADING.finditer(text):
            level, name, params = match.groups()
            rest = text[match.end() :]
            end = re.search(rf"^#{{1,{len(level)}}} ", rest, flags=re.M)
            body = rest[: end.start()] if end else rest
            sections[name] = (page.relative_to(ROOT).as_posix(), params, body)
    return sections


def test_plugin_hookspecs_are_found() -> None:
    assert "hookagent_register_cli_commands" in PLUGIN_HOOKS  # the rule looks where they are


@pytest.mark.parametrize("name", sorted(PLUGIN_HOOKS))
def test_plugin_hook_is_documented_with_its_exact_signature(name: str) -> None:
    where, func = PLUGIN_HOOKS[name]
    sections = _plugin_hook_sections()
    assert name in sections, f"{name} ({where}): no docs page has a section headed `{name}(...)`"
    page, params, body = sections[name]
    signature = inspect.signature(func)  # type: ignore[arg-type]
    expected = ", ".join(signature.parameters)
    assert params == expected, f"{page} says {name}({params}), the spec is {name}({expected})"
    assert "```python" in body, f"{page}: {name} has no example"
    assert "Used by:" in body, f"{page}: {name} does not say which plugins use it"
    for param in signature.parameters:
        assert f"`{param}`" in body, f"{page}: {name}: parameter {param} is not described"
    assert func.__doc__ and "Result" in func.__doc__, f"{where}: {name} has no Result docstring"


def test_every_plugin_hook_has_a_test_hook_function() -> None:
    sources = "".join(p.read_text() for p in (ROOT / "src").rglob("test_*.py"))
    missing = [n for n in PLUGIN_HOOKS if f"def test_hook_{n}(" not in sources]
    assert missing == []
