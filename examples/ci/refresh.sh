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
# 0 ok, 1 a source failed (the others still ran), 2 the config or a flag is wrong.
#
#   DOCS_FLATTEN_CONFIG  the config             (default: docs-flatten.yaml)
#   DOCS_FLATTEN_STORE   the index directory    (default: .docs-flatten; cache it between runs)
#   DOCS_FLATTEN_OUT     where summaries go     (default: the store's last-run/, never read
#                                                as input: the store is skipped as build output)
#   DOCS_FLATTEN         the command            (default: docs-flatten)
#   PYTHON               formats the table      (default: python3)
set -u

config="${DOCS_FLATTEN_CONFIG:-docs-flatten.yaml}"
store="${DOCS_FLATTEN_STORE:-.docs-flatten}"
out="${DOCS_FLATTEN_OUT:-$store/last-run}"
mkdir -p "$out"

status=0
# shellcheck disable=SC2086  # DOCS_FLATTEN may be a command with arguments (python -m flatten)
${DOCS_FLATTEN:-docs-flatten} ingest --config "$config" --store "$store" --json \
    > "$out/summary.jsonl" || status=$?

"${PYTHON:-python3}" - "$out/summary.jsonl" > "$out/summary.md" <<'PY'
import json, sys

rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
print("| corpus | source | commit | files kept | added | updated | removed | chunks | status |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    load, files, chunks = r["load"] or {}, r["files"] or {}, r["chunks"] or {}
    status = "ok" if r["ok"] else f"FAILED: {r['error']['reason']}: {r['error']['message']}"
    cells = [r["corpus"] or "-", r["source"] or "-", (r["commit"] or "-")[:12],
             files.get("kept", "-"), load.get("added", "-"), load.get("updated", "-"),
             load.get("removed", "-"), chunks.get("total", "-"), status]
    print("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
PY

cat "$out/summary.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    cat "$out/summary.md" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
