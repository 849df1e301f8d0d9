"""How the commands print: JSON documents, result lists, summaries. The commands decide what to
print; this module decides how, so the text forms live in one place.

Data goes to stdout and nothing else does: the tier line of a ranked search is a diagnostic and
goes to stderr, so `docs-flatten get README.md > x.md` writes exactly the document.

Everything printed passes `index.text.clean` here, once: indexed text is untrusted, so no escape
sequence reaches the terminal and no secret leaves the index (`say` for text, `echo_json` and
`json_line` for JSON). A field inside a line (a path, a title) shows its line breaks as `\\n`.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import typer

from flatten.cli.failures import error_lines
from flatten.errors import FlattenError
from flatten.jsonform import to_json
from flatten.shown import one_line
from index.text import clean, clean_json

if TYPE_CHECKING:
    from typer._click.core import Context
    from typer._click.exceptions import UsageError

    from index.documents import ChunkView, MatchedDocument, Page, SourceInfo, TocEntry, Word
    from index.health import Diagnosis, StoreHealth
    from index.results import Ranking, SearchResponse, TierUsed
    from index.vectors.client import DoctorReport


def json_usage_error(exc: UsageError, ctx: Context) -> None:
    """A usage error (a bad option, a missing argument) of a command run with --json, as the
    JSON a script reads on stdout, in the shape of a failed run's summary (`ok`, `error` with
    `reason`, `message`, `hint`); people still read click's usage text on stderr."""
    kind = _CAMEL.sub("-", type(exc).__name__).lower()  # NoSuchOption -> no-such-option
    _json_error(str(ctx.info_name), kind, exc.format_message(), f"see `{ctx.command_path} --help`")


def json_failure(command: str, exc: FlattenError) -> None:
    """A query command's failure under --json, in the usage error's shape: a script reading
    stdout learns why (an empty stdout looks like a crash); people read it on stderr."""
    message, *hint = (
        line.removeprefix("error: ").removeprefix("hint: ") for line in error_lines(exc)
    )
    _json_error(command, exc.reason, message, hint[0] if hint else None)


def _json_error(command: str, reason: str, message: str, hint: str | None) -> None:
    error = {"reason": reason, "message": " ".join(message.split()), "hint": hint}
    typer.echo(json.dumps(clean_json({"command": command, "ok": False, "error": error}),
                          ensure_ascii=False))  # fmt: skip


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def say(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Print a line (or a block) of text, cleaned."""
    typer.echo(clean(text), err=err, nl=nl)


def _f(value: object) -> str:
    """A field shown inside a line of text."""
    return one_line(str(value))


def echo_json(data: Any) -> None:
    """A JSON document (dataclasses in their one JSON form), every string cleaned."""
    typer.echo(json.dumps(clean_json(to_json(data)), ensure_ascii=False, indent=2))


def json_line(data: Any) -> None:
    """One compact JSON line (`search --queries`), every string cleaned."""
    from flatten.record import dumps  # the codec (orjson) loads when a line is written

    typer.echo(dumps(clean_json(to_json(data))))


def tier_text(used: TierUsed) -> str:
    """The tier line: which tier a ranked search ran at, and why (worded here, and only here)."""
    # Here, not at the top: a failed flatten prints its error through this module, and needs
    # neither the results' module nor the citations under it.
    from index.results import REQUESTED, Tier

    if used.degraded:
        return f"tier: hybrid -> DEGRADED to lexical ({used.reason})"
    if used.name == Tier.LEXICAL:
        why = "forced by --tier" if used.reason == REQUESTED else used.reason
        return f"tier: lexical ({used.engine or 'FTS5'}) - {why}"
    vectors = f"model={used.model} dim={used.dimension}"
    if used.name == Tier.HYBRID:
        return f"tier: hybrid ({used.engine or 'FTS5'} + vectors, RRF) - {vectors}"
    return f"tier: vector - {vectors}"


def tier_line(used: TierUsed) -> None:
    """The tier line, on stderr."""
    say(tier_text(used), err=True)


def results(response: SearchResponse, explain: bool = False) -> None:
    if not response.results:
        say("no results: nothing in the index matched this query")
        return
    if explain and response.also_asked:
        words = ", ".join(_f(w) for w in response.also_asked)
        say(f"also asked, in headings (the words docs use for the question's phrasing): {words}")
    for n, r in enumerate(response.results, start=1):
        lines = r.range_text()
        vector = ""
        if r.keyword_match is not None:
            similarity = "-" if r.similarity is None else f"{r.similarity:.3f}"
            vector = f" similarity={similarity} keyword={'yes' if r.keyword_match else 'no'}"
        say(f"{n}. {_f(r.label())}  {lines}  [{_f(r.corpus)}] score={r.score:.4g}{vector}")
        if explain and r.keyword_match is not None:
            say(f"   explain: lexical rank {r.lexical_rank or '-'}, vector rank "
                f"{r.vector_rank or '-'}, fused {r.fused or 0:.6f} "
                "(sum of 1/(k+rank))")  # fmt: skip
        if explain and r.ranking:
            say("   " + ranking_text(r.ranking))
        section = f"  ({_f(' > '.join(r.section))})" if r.section else ""
        say(f"   {_f(r.title)}{section}")
        if r.citation not in (r.token, r.source, one_line(r.source)):  # a link, or path:lines
            say(f"   cite: {_f(r.citation)}")
        if r.snippet:
            say(f"   {_f(r.snippet)}")
        if r.other_matches:
            anchors = ", ".join(f"#{_f(a)}" for a in r.other_anchors or [])
            say(
                f"   +{r.other_matches} more in this document" + (f": {anchors}" if anchors else "")
            )


def ranking_text(ranking: Ranking) -> str:
    """How a score was made, in one line (--explain)."""
    prior = "no prior"
    if ranking.prior:
        state = "lifted: the query asks for it" if ranking.asked else f"x{ranking.prior_weight}"
        prior = f"prior {ranking.prior} ({state})"
    fields = f"title/path/heading {ranking.field_score:.4f}"
    if ranking.name_score:
        fields = f"({fields} + declares the name {ranking.name_score:.4f})"
    return (
        f"explain: ({ranking.stage} {ranking.slice_score:.4f} + {ranking.field_weight:g} x "
        f"{fields}) x {prior}, then x the corpus weight"
    )


def evaluation(summary: dict[str, Any]) -> None:
    judged = summary.pop("judged", {})
    say(" ".join(f"{key}={value}" for key, value in summary.items()))
    say("judged ids name: " + (", ".join(f"{n} {kind}" for kind, n in judged.items()) or "nothing"))


def unmatched_judgments(unmatched: list[tuple[str, str]], shown: int = 10) -> None:
    """A warning naming the judged ids that match nothing in the index (on stderr)."""
    if not unmatched:
        return
    listed = ", ".join(f"{_f(query)}: {_f(judged)}" for query, judged in unmatched[:shown])
    more = f" and {len(unmatched) - shown} more" if len(unmatched) > shown else ""
    say(f"warning: {len(unmatched)} judged id(s) match nothing in the index ({listed}{more})",
        err=True)  # fmt: skip


def matched(found: list[MatchedDocument], words: list[str], paths_only: bool) -> None:
    if not found:
        say("no document contains " + " and ".join(_f(w) for w in words))
    for doc in found:
        say(_f(doc.source) if paths_only else
            f"{_f(doc.source)}  [{_f(doc.corpus)}] {doc.chunks} chunk(s)")  # fmt: skip


def vocabulary(found: list[Word]) -> None:
    for w in found:
        say(f"{_f(w.word):<30} stem={_f(w.stem):<24} exact={w.exact_documents} "
            f"any-form={w.any_form_documents}")  # fmt: skip


def sources(found: list[SourceInfo], unmapped: int) -> None:
    for s in found:
        cited = f"  -> {_f(s.citation)}" if s.citation else ""
        say(f"{_f(s.source)}  [{_f(s.corpus)}] {s.chunks} chunk(s), {_f(s.indexed_at)}{cited}")
    say(f"{len(found)} document(s); {unmapped} without a citation rule match")


def chunk(view: ChunkView) -> None:
    lines = f"  {view.range_text()}" if view.start_line else ""
    say(f"{_f(view.label())}  [{_f(view.corpus)}] {_f(view.title)}{lines}")
    if view.citation not in (view.token, view.source, one_line(view.source)):
        say(f"cite: {_f(view.citation)}")
    say("")
    say(view.content)


def page(found: Page, source: str) -> None:
    """The page on stdout, exactly; where the rest starts on stderr, so `get X > x.md` holds only
    the document."""
    say(found.text, nl=False)
    if found.next_offset is not None:
        say(f"[continues: docs-flatten get {_f(source)} --offset {found.next_offset}, "
            "or --all for the whole document]", err=True)  # fmt: skip


def toc(entries: list[TocEntry]) -> None:
    for entry in entries:
        say(_f(entry.source) + (f"  ({_f(entry.title)})" if entry.title else ""))
        for title in entry.sections:
            say(f"  - {_f(title)}")


def card(text: str) -> None:
    say(text, nl=False)


def stats(info: dict[str, Any]) -> None:
    say(f"store: {_f(info['store'])} ({info['bytes'] / 1e6:.1f} MB)")
    for c in info["corpora"]:
        origin = f" from {_f(c['repoUrl'])}@{(c['commit'] or '')[:12]}" if c["repoUrl"] else ""
        say(f"corpus {_f(c['name'])}: {c['documents']} documents, {c['chunks']} chunks{origin}")
    say("kinds: " + ", ".join(f"{_f(k)} {v}" for k, v in info["kinds"].items()))
    if vectors := info["vectors"]:
        skipped = ", ".join(f"{n} {why}" for why, n in vectors["chunksSkipped"].items())
        say(f"vectors: {vectors['vectors']:,} of model={_f(vectors['model'])} "
            f"dim={vectors['dimension']}; chunks with a vector "
            f"{vectors['chunksWithVector']:,}, pending {vectors['chunksPending']:,}"
            + (f", skipped {skipped}" if skipped else ""))  # fmt: skip


def doctor(found: Diagnosis) -> None:
    """`doctor`: the store's health, then the embeddings probe, then what was not checked."""
    if found.store is not None:
        store_health(found.store)
    if found.embeddings is not None:
        embeddings_probe(found.embeddings)
    for what in found.unchecked:
        say(f"not checked: {_f(what)}")


_SCHEMA_STATES = {"current": "this version's", "older": "older: the next load upgrades it",
                  "newer": "newer than this version: refused"}  # fmt: skip


def store_health(health: StoreHealth) -> None:
    size = f", {health.bytes / 1e6:.1f} MB" if health.bytes is not None else ""
    say(f"store: {_f(health.store)} ({health.kind or 'not opened'}{size})")
    if health.schema_state:
        ours = "" if health.schema_state == "current" else f"; this version's: {health.this_schema}"
        say(f"schema: {_f(health.schema or '?')} ({_SCHEMA_STATES[health.schema_state]}{ours})")
    if server := health.server:
        extensions = ", ".join(f"{_f(k)} {_f(v)}" for k, v in server.extensions.items())
        say(f"server: PostgreSQL {_f(server.version)}; extensions: {extensions or 'none'}; "
            f"pg_search: {server.pg_search}")  # fmt: skip
    if text := health.text:
        checked = ", ".join(text.checked) or "nothing"
        line = f"text index: {text.engine}, {text.chunks:,} chunks; checked: {checked}"
        if text.pending_deltas is not None:
            line += (f"; deltas not folded: {text.pending_deltas:,}; deleted chunks awaiting "
                     f"compaction: {text.dead_chunks:,}")  # fmt: skip
        say(line)
    if vectors := health.vectors:
        extra = f", sidecar {vectors.sidecar}" if vectors.sidecar else ""
        extra += f", pgvector {vectors.pgvector}" if vectors.pgvector else ""
        say(f"vectors: {vectors.vectors:,} of model={_f(vectors.model)} dim={vectors.dimension}; "
            f"chunks with a vector {vectors.chunks_with_vector:,}, pending "
            f"{vectors.chunks_pending:,}, missing their vector {vectors.chunks_missing_vector:,}; "
            f"search: {vectors.search}{extra}")  # fmt: skip
    elif health.text is not None:
        say("vectors: none (lexical only)")
    for c in health.corpora:
        say(f"corpus {_f(c.name)}: {c.documents:,} documents, {c.chunks:,} chunks")
    for finding in health.findings:
        say(f"{finding.level}: {finding.reason}: {_f(finding.message)}")
    failed = sum(f.level == "failed" for f in health.findings)
    warned = len(health.findings) - failed
    verdict = "ok" if not health.findings else f"{failed} failed, {warned} warning(s)"
    say(f"store check: {verdict}")


def embeddings_probe(report: DoctorReport) -> None:
    say(f"embeddings server: {_f(report.base_url)}  model: {_f(report.model)}")
    if report.reachable:
        say(f"reachable: yes  dimension: {report.dimension}  "
            f"normalised: {'yes' if report.normalized else 'no'}")  # fmt: skip
        say("latency per batch of 8: " + ", ".join(f"{ms} ms" for ms in
                                                   report.batch_latency_ms))  # fmt: skip
    if report.suggested_query_prefix:
        say(f"suggested query_prefix: {report.suggested_query_prefix!r}")
        say(f"suggested document_prefix: {report.suggested_document_prefix!r}")
