"""The shape of the house: the library never reaches the CLI, the store never loads a slicer, and
no two modules import each other (directly or round a longer circle)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("flatten", "index", "slicers", "crawl")


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `statement`."""
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=120)  # fmt: skip
    return set(out.stdout.split())


def test_the_library_imports_no_cli_typer_or_rich():
    # httpx imports its own command line (rich, click) when they are installed: blocked here,
    # since that is httpx's choice, not ours.
    loaded = _loaded_after("sys.modules['httpx._main'] = None; import flatten, index, slicers, "
                           "crawl; " + "; ".join(
        f"import {m}" for m in sorted(_modules())
        if not m.startswith("flatten.cli") and not m.endswith("__main__")
    ))  # fmt: skip
    adapters = sorted(m for m in loaded if m.startswith(("flatten.cli", "typer", "rich")))
    assert adapters == []


def test_the_store_loads_no_slicer_and_no_pipeline():
    loaded = _loaded_after("import index.store")
    assert sorted(m for m in loaded if m.split(".")[0] == "slicers") == []
    assert "flatten.pipeline" not in loaded


def test_the_clis_start_up_loads_no_pipeline_index_or_crawler():
    """`docs-flatten --help` reads the option dataclasses' defaults; what the commands run loads
    when they run (the help path went from 0.20 to 0.28 s when options.py imported the
    pipeline for its defaults)."""
    loaded = _loaded_after("import flatten.cli.app")
    heavy = ("flatten.pipeline", "flatten.secrets", "flatten.sources", "slicers.registry",
             "index.loader", "index.ingest", "index.vectors.client", "crawl.crawler", "httpx",
             "xml.sax",
             # what only a running command needs: the writer (tempfile), the packer, the
             # loading summary and progress line, the evaluator, the MCP listener's socket
             "flatten.writer", "flatten.pack", "flatten.summary", "flatten.progress",
             "flatten.cli.loading", "index.evaluate", "socket", "tempfile",
             # the search stages: `index` is a lazy package face, search loads when a query runs
             "index.search", "index.ranking")  # fmt: skip
    assert sorted(m for m in loaded if m.startswith(heavy)) == []


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _import_nodes(tree: ast.Module, lazy_face: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import that runs: not those under `if TYPE_CHECKING`, and for a package face not
    those in its functions (the lazy `__getattr__` table is not a dependency)."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if lazy_face and isinstance(node, ast.FunctionDef):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules `name` imports, at the top or inside functions alike."""
    targets: set[str] = set()
    face = path.name == "__init__.py"
    package = name if face else name.rpartition(".")[0]
    for node in _import_nodes(ast.parse(path.read_text(), str(path)), face):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        else:
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in known and t != name}


def test_no_import_cycles_between_modules():
    known = _modules()
    graph = {name: _imports(name, path, known) for name, path in known.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append([*trail[trail.index(target) :], target])
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


# The flatten modules the index may use: leaves (the record codec, errors, hashing, the one rule
# for credentials in URLs...), never the pipeline, the writer or the sources. crawl.options (the
# crawl's settings and their bounds, which the config checks) is one too: no crawler in it.
INDEX_MAY_USE = {"flatten", "flatten._lazy", "flatten._version", "flatten.errors",
                 "flatten.hashing", "flatten.record", "flatten.retry", "flatten.secrets",
                 "flatten.content", "flatten.config", "flatten.jsonform",
                 "flatten.shown", "flatten.userinfo", "flatten.leftovers",
                 "crawl.options"}  # fmt: skip


def test_the_flatten_modules_the_index_may_use_are_leaves():
    # A leaf's own imports stay among the leaves (or inside its own package, as
    # flatten.secrets' pattern tables): one that reached the pipeline would bring it along.
    known = _modules()
    assert set(known) >= INDEX_MAY_USE
    beyond = {
        (leaf, target)
        for leaf in INDEX_MAY_USE - {"flatten"}  # the package face: lazy, see _import_nodes
        for target in _imports(leaf, known[leaf], known)
        if target not in INDEX_MAY_USE and not target.startswith(leaf + ".")
    }
    assert beyond == set()


def test_the_index_reads_records_through_the_codec_and_never_the_writer_or_pipeline():
    known = _modules()
    allowed = INDEX_MAY_USE
    reached = {
        (name, target)
        for name, path in known.items()
        if name.split(".")[0] == "index"
        for target in _imports(name, path, known)
        if target.split(".")[0] == "flatten" and target not in allowed
    }
    assert reached == set()


def test_the_index_splits_text_and_joins_chunks_in_one_place_each():
    # The tokenizer's token pattern lives in index.text, the chunk -> document -> corpus join in
    # index.scope: a copy elsewhere drifts from the one the index and its filters use.
    copies = {"token": [], "join": []}
    for path in sorted((ROOT / "index").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        if r"[^\W_]+" in text and name != "index/text.py":
            copies["token"].append(name)
        if "JOIN documents d ON d.id = c.document_id JOIN corpora" in text and name != (
            "index/scope.py"
        ):
            copies["join"].append(name)
    assert copies == {"token": [], "join": []}
