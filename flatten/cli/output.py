"""How the commands print: JSON documents, result lists, summaries. The commands decide what to
print; this module decides how, so the text forms live in one place.

Data goes to stdout and nothing else does: the tier line of a ranked search is a diagnostic and
goes to stderr, so `docs-flatten get README.md > x.md` writes exactly the document.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from index.documents import ChunkView, MatchedDocument, Page, SourceInfo, TocEntry, Word
    from index.search import SearchResponse
    from index.vectors.client import DoctorReport


def echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def tier_line(line: str) -> None:
    """Which tier a ranked search ran at (and why, when it degraded): on stderr."""
    typer.echo(line, err=True)


def results(response: SearchResponse, explain: bool = False) -> None:
    if not response.results:
        typer.echo("no results: nothing in the index matched this query")
        return
    for n, r in enumerate(response.results, start=1):
        lines = f"L{r.start_line}-{r.end_line}" if r.start_line else ""
        vector = ""
        if r.keyword_match is not None:
            similarity = "-" if r.similarity is None else f"{r.similarity:.3f}"
            vector = f" similarity={similarity} keyword={'yes' if r.keyword_match else 'no'}"
        typer.echo(f"{n}. {r.token}  {lines}  [{r.corpus}] score={r.score:.4g}{vector}")
        if explain:
            typer.echo(f"   explain: lexical rank {r.lexical_rank or '-'}, vector rank "
                       f"{r.vector_rank or '-'}, fused {r.fused or 0:.6f} (sum of 1/(k+rank)), "
                       f"score {r.score:.6f} after the corpus weight")  # fmt: skip
        typer.echo(f"   {r.title}" + (f"  ({' > '.join(r.section)})" if r.section else ""))
        if r.citation:
            typer.echo(f"   cite: {r.citation}")
        if r.snippet:
            typer.echo(f"   {r.snippet}")


def evaluation(summary: dict[str, Any]) -> None:
    typer.echo(" ".join(f"{key}={value}" for key, value in summary.items()))


def matched(found: list[MatchedDocument], words: list[str], paths_only: bool) -> None:
    if not found:
        typer.echo("no document contains " + " and ".join(words))
    for doc in found:
        typer.echo(
            doc.source if paths_only else f"{doc.source}  [{doc.corpus}] {doc.chunks} chunk(s)"
        )


def vocabulary(found: list[Word]) -> None:
    for w in found:
        typer.echo(
            f"{w.word:<30} stem={w.stem:<24} exact={w.exact_documents} "
            f"any-form={w.any_form_documents}"
        )


def sources(found: list[SourceInfo], unmapped: int) -> None:
    for s in found:
        cited = f"  -> {s.citation}" if s.citation else ""
        typer.echo(f"{s.source}  [{s.corpus}] {s.chunks} chunk(s), {s.indexed_at}{cited}")
    typer.echo(f"{len(found)} document(s); {unmapped} without a citation rule match")


def chunk(view: ChunkView) -> None:
    lines = f"  L{view.start_line}-{view.end_line}" if view.start_line else ""
    typer.echo(f"{view.token}  [{view.corpus}] {view.title}{lines}")
    if view.citation:
        typer.echo(f"cite: {view.citation}")
    typer.echo("")
    typer.echo(view.content)


def page(found: Page, source: str) -> None:
    typer.echo(found.text, nl=False)
    if found.next_offset is not None:
        typer.echo(f"\n[continues: docs-flatten get {source} --offset {found.next_offset}]")


def toc(entries: list[TocEntry]) -> None:
    for entry in entries:
        typer.echo(f"{entry.source}" + (f"  ({entry.title})" if entry.title else ""))
        for title in entry.sections:
            typer.echo(f"  - {title}")


def stats(info: dict[str, Any]) -> None:
    typer.echo(f"store: {info['store']} ({info['bytes'] / 1e6:.1f} MB)")
    for c in info["corpora"]:
        origin = f" from {c['repoUrl']}@{(c['commit'] or '')[:12]}" if c["repoUrl"] else ""
        typer.echo(f"corpus {c['name']}: {c['documents']} documents, {c['chunks']} chunks{origin}")
    typer.echo("kinds: " + ", ".join(f"{k} {v}" for k, v in info["kinds"].items()))
    if vectors := info["vectors"]:
        skipped = ", ".join(f"{n} {why}" for why, n in vectors["chunksSkipped"].items())
        typer.echo(f"vectors: {vectors['vectors']:,} of model={vectors['model']} "
                   f"dim={vectors['dimension']}; chunks with a vector "
                   f"{vectors['chunksWithVector']:,}, pending {vectors['chunksPending']:,}"
                   + (f", skipped {skipped}" if skipped else ""))  # fmt: skip


def doctor(report: DoctorReport) -> None:
    typer.echo(f"server: {report.base_url}  model: {report.model}")
    if report.reachable:
        typer.echo(f"reachable: yes  dimension: {report.dimension}  "
                   f"normalised: {'yes' if report.normalized else 'no'}")  # fmt: skip
        typer.echo("latency per batch of 8: " + ", ".join(f"{ms} ms" for ms in
                                                          report.batch_latency_ms))  # fmt: skip
    if report.suggested_query_prefix:
        typer.echo(f"suggested query_prefix: {report.suggested_query_prefix!r}")
        typer.echo(f"suggested document_prefix: {report.suggested_document_prefix!r}")
