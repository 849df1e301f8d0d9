"""Deterministic generated sources for the benchmarks: realistic shapes, many formats."""

from __future__ import annotations

import random
from collections.abc import Callable

WORDS = (
    "parcel",
    "carrier",
    "tracking",
    "event",
    "webhook",
    "timeline",
    "deploy",
    "cluster",
    "config",
    "token",
    "retry",
    "database",
    "schema",
    "index",
    "query",
    "cache",
    "latency",
    "request",
    "response",
    "handler",
    "service",
    "client",
    "install",
    "upgrade",
    "migrate",
    "rollback",
    "release",
    "version",
    "branch",
    "commit",
    "review",
    "build",
    "test",
)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + "."


def ident(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{rng.randint(0, 9999)}"


def camel(rng: random.Random) -> str:
    return "".join(w.capitalize() for w in (rng.choice(WORDS), rng.choice(WORDS))) + str(
        rng.randint(0, 999)
    )


def markdown(rng: random.Random, target: int) -> str:
    parts = [f"# {sentence(rng)[:40]}\n"]
    size = 0
    while size < target:
        kind = rng.random()
        if kind < 0.15:
            block = f"{'#' * rng.randint(2, 4)} {sentence(rng)[:50]}\n"
        elif kind < 0.30:
            body = "\n".join(f"    {rng.choice(WORDS)}({rng.randint(0, 99)})" for _ in range(6))
            block = f"```python\n# {rng.choice(WORDS)}\n{body}\n```\n"
        elif kind < 0.40:
            block = "\n".join(f"- {sentence(rng)}" for _ in range(4)) + "\n"
        else:
            block = " ".join(sentence(rng) for _ in range(4)) + "\n"
        parts.append(block)
        size += len(block)
    return "\n".join(parts)


def _repeat(rng: random.Random, target: int, head: str, unit: Callable[[], str]) -> str:
    parts = [head]
    size = len(head)
    while size < target:
        block = unit()
        parts.append(block)
        size += len(block)
    return "".join(parts)


def _statements(rng: random.Random, fmt: str, indent: str, n: int) -> str:
    return "\n".join(indent + fmt.format(v=ident(rng), w=rng.choice(WORDS), i=i) for i in range(n))


def python(rng: random.Random, target: int) -> str:
    def unit() -> str:
        if rng.random() < 0.3:
            methods = "".join(
                f"\n    def {ident(rng)}(self, value):\n        '''{sentence(rng)}'''\n"
                + _statements(rng, "{v} = value * {i}", "        ", rng.randint(2, 8))
                + "\n        return value\n"
                for _ in range(rng.randint(2, 6))
            )
            return f"\n\nclass {camel(rng)}:\n    '''{sentence(rng)}'''\n{methods}"
        body = _statements(rng, "{v} = {w!r} * {i}", "    ", rng.randint(3, 12))
        return (
            f"\n\ndef {ident(rng)}(value):\n    '''{sentence(rng)}'''\n{body}\n    return value\n"
        )

    return _repeat(rng, target, '"""Generated module."""\n\nimport os\nimport sys\n', unit)


def go(rng: random.Random, target: int) -> str:
    def unit() -> str:
        body = _statements(rng, '{v} := "{w}" + strconv.Itoa({i})', "\t", rng.randint(3, 10))
        if rng.random() < 0.5:
            return (
                f"\n// {camel(rng)} {sentence(rng)}\nfunc (s *Server) {camel(rng)}() error {{"
                f"\n{body}\n\treturn nil\n}}\n"
            )
        return f"\n// {sentence(rng)}\nfunc {camel(rng)}(v int) int {{\n{body}\n\treturn v\n}}\n"

    return _repeat(rng, target, 'package gen\n\nimport "strconv"\n\ntype Server struct{}\n', unit)


def typescript(rng: random.Random, target: int) -> str:
    def unit() -> str:
        body = _statements(rng, 'const {v} = "{w}".repeat({i});', "  ", rng.randint(3, 10))
        if rng.random() < 0.3:
            return f"\nexport class {camel(rng)} {{\n  run(): void {{\n{body}\n  }}\n}}\n"
        return f"\n/** {sentence(rng)} */\nexport function {camel(rng)}(v: number): number {{\n{body}\n  return v;\n}}\n"  # noqa: E501

    return _repeat(rng, target, 'import { api } from "./api";\n', unit)


def rust(rng: random.Random, target: int) -> str:
    def unit() -> str:
        body = _statements(rng, 'let {v} = "{w}".repeat({i});', "    ", rng.randint(3, 10))
        return f"\n/// {sentence(rng)}\npub fn {ident(rng)}(v: i64) -> i64 {{\n{body}\n    v\n}}\n"

    return _repeat(rng, target, "use std::fmt;\n", unit)


def java(rng: random.Random, target: int) -> str:
    methods = []
    size = 0
    while size < target:
        body = _statements(rng, 'String {v} = "{w}" + {i};', "        ", rng.randint(3, 10))
        method = f"\n    /** {sentence(rng)} */\n    public int {camel(rng)}(int v) {{\n{body}\n        return v;\n    }}\n"  # noqa: E501
        methods.append(method)
        size += len(method)
    head = "package gen;\n\nimport java.util.List;\n\n"
    return f"{head}public class {camel(rng)} {{{''.join(methods)}}}\n"


def terraform(rng: random.Random, target: int) -> str:
    def unit() -> str:
        attrs = _statements(rng, '{v} = "{w}-{i}"', "  ", rng.randint(3, 10))
        address = f'"aws_{rng.choice(WORDS)}" "{ident(rng)}"'
        return f"\n# {sentence(rng)}\nresource {address} {{\n{attrs}\n}}\n"

    return _repeat(rng, target, 'terraform {\n  required_version = ">= 1.5"\n}\n', unit)


def yaml(rng: random.Random, target: int) -> str:
    def unit() -> str:
        data = _statements(rng, "{v}: {w}-{i}", "  ", rng.randint(5, 20))
        return (
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {ident(rng)}\n"
            f"  namespace: {rng.choice(WORDS)}\ndata:\n{data}\n"
        )

    return _repeat(rng, target, "", unit)


def shell(rng: random.Random, target: int) -> str:
    def unit() -> str:
        body = _statements(rng, 'echo "{w} {i}" >> "$LOG"', "  ", rng.randint(3, 10))
        return f"\n# {sentence(rng)}\n{ident(rng)}() {{\n{body}\n}}\n"

    return _repeat(rng, target, "#!/usr/bin/env bash\nset -euo pipefail\n", unit)


# extension -> (generator, share of the mixed repository)
MIXED: dict[str, tuple[Callable[[random.Random, int], str], float]] = {
    ".md": (markdown, 0.30),
    ".py": (python, 0.15),
    ".go": (go, 0.10),
    ".ts": (typescript, 0.12),
    ".rs": (rust, 0.06),
    ".java": (java, 0.06),
    ".tf": (terraform, 0.07),
    ".yaml": (yaml, 0.10),
    ".sh": (shell, 0.04),
}
