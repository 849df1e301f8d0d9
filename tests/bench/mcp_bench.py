"""MCP benchmark: `knowledge_search` round trips through the official client over stdio.

The server is `docs-flatten mcp` in its own process on the lexical benchmark's store; each
figure is one `call_tool` as an agent's harness sees it (JSON-RPC over pipes included).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class McpMeasurement:
    slices: int
    p50_ms: float
    p95_ms: float
    queries: int


def measure_mcp(work: Path, count: int, queries: list[str]) -> McpMeasurement:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "flatten", "mcp", "--store", str(work / f"store-{count}")],
    )

    async def run() -> list[float]:
        async with Client(server, read_timeout_seconds=120) as client:
            await client.call_tool("knowledge_search", {"query": "warm up"})
            latencies = []
            for query in queries:
                started = time.perf_counter()
                await client.call_tool("knowledge_search", {"query": query, "top_k": 5})
                latencies.append((time.perf_counter() - started) * 1000)
            return latencies

    latencies = sorted(asyncio.run(run()))
    return McpMeasurement(
        count,
        round(statistics.median(latencies), 2),
        round(latencies[int(len(latencies) * 0.95) - 1], 2),
        len(latencies),
    )
