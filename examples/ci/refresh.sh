#!/bin/sh
# Refresh a docs-flatten index: every source listed in docs-flatten.yaml, several at a time, each
# a whole snapshot of its own corpus (a repository whose remote has not moved since its last load
# is not cloned, and unchanged documents are skipped, so a warm store is quick). For hundreds of
# repositories spread over a CI matrix, see github-actions-shards.yml.
# Both CI recipes (github-actions.yml, gitlab-ci.yml) call this one script; the tests run it on a
# local git repository.
#
# Writes $OUT/summary.jsonl (one run summary per source, schema 1: see the README) and
# $OUT/summary.md (a table; appended to $GITHUB_STEP_SUMMARY on GitHub). Exits as ingest does:
# 0 ok, 1 a source failed (the others still ran) or the table could not be made, 2 the config
# or a flag is wrong (a source whose corpus holds another source too: corpus-source-mismatch;
# the others still ran).
#
#   DOCS_FLATTEN_CONFIG  the config             (default: docs-flatten.yaml)
#   DOCS_FLATTEN_STORE   the index: a directory (default: .docs-flatten; cache it between
#                        runs) or a postgresql:// URL (its password from password_env=VAR)
#   DOCS_FLATTEN_OUT     where summaries go     (default: the store directory's last-run/, or
#                                                .docs-flatten/last-run/ for a URL)
#   DOCS_FLATTEN         the command            (default: docs-flatten)
#   PYTHON               formats the table      (default: python3)
#
# The recipe's own output is never input: the last run's summaries are removed before ingest
# runs and the new ones are written elsewhere until it is done (a source `root: .` would
# otherwise index summary.md). What it makes is private, as the store's own files are: folders
# 0700, files 0600.
set -u
umask 077

config="${DOCS_FLATTEN_CONFIG:-docs-flatten.yaml}"
store="${DOCS_FLATTEN_STORE:-.docs-flatten}"
case "$store" in
    postgresql://* | postgres://*) out="${DOCS_FLATTEN_OUT:-.docs-flatten/last-run}" ;;
    *) out="${DOCS_FLATTEN_OUT:-$store/last-run}" ;;
esac
mkdir -p "$out" || exit 1
rm -f "$out/summary.jsonl" "$out/summary.md"
work="$(mktemp -d)" || exit 1
trap 'rm -rf "$work"' EXIT

status=0
# shellcheck disable=SC2086  # DOCS_FLATTEN may be a command with arguments (python -m flatten)
${DOCS_FLATTEN:-docs-flatten} ingest --config "$config" --store "$store" --json \
    > "$work/summary.jsonl" || status=$?

table=0
"${PYTHON:-python3}" - "$work/summary.jsonl" > "$work/summary.md" <<'PY' || table=$?
import json, sys

rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
print("| corpus | source | commit | files kept | added | updated | removed | chunks | status |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    load, files, chunks = r["load"] or {}, r["files"] or {}, r["chunks"] or {}
    status = "ok" if r["ok"] else f"FAILED: {r['error']['reason']}: {r['error']['message']}"
    if r["ok"] and r.get("upToDate"):  # its remote had not moved: not cloned, nothing loaded
        status = "up to date, not cloned"
    cells = [r["corpus"] or "-", r["source"] or "-", (r["commit"] or "-")[:12],
             files.get("kept", "-"), load.get("added", "-"), load.get("updated", "-"),
             load.get("removed", "-"), chunks.get("total", "-"), status]
    # One table row each: a message of several lines is put on one
    print("| " + " | ".join(" ".join(str(c).split()).replace("|", "\\|") for c in cells) + " |")
PY

mv "$work/summary.jsonl" "$work/summary.md" "$out/" || exit 1
# A green run says what it did: loads that succeeded with no table to show them fail the job.
if [ "$table" -ne 0 ]; then
    echo "error: could not write the summary table (${PYTHON:-python3} exited $table); the run summaries are in $out/summary.jsonl" >&2
    [ "$status" -eq 0 ] && status=1
fi
cat "$out/summary.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    cat "$out/summary.md" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
