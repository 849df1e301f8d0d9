"""What `ingest` runs: one job per source, each setting resolved flag > config > default.

The sources are the flags' (`--root`, `--repo` or `--url`) when one is given, else the config's
`sources:` list. Each job is a whole snapshot of its own corpus, so two jobs naming one corpus
are refused before anything runs (the second would remove the first's documents). `config
--show` prints the same plan.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from typing import Any

from flatten.config import FLATTEN_KEYS, SOURCE_KEYS, SOURCE_KINDS, Setting, resolve
from flatten.corpus_names import source_corpus
from flatten.errors import UsageError

_NAMED_BY = {"repo": "the repository's name", "root": "the folder's name",
             "url": "the site's host and path"}  # fmt: skip


@dataclass(frozen=True)
class Job:
    where: str  # "flags" or "sources[N]" (the config entry)
    settings: dict[str, Setting]  # every source setting (SOURCE_KEYS), with its origin

    def value(self, name: str) -> Any:
        return self.settings[name].value

    @property
    def kind(self) -> str:
        """repo, root or url."""
        return next(k for k in SOURCE_KINDS if self.value(k) is not None)

    @property
    def source(self) -> str:
        return str(self.value(self.kind))

    @property
    def corpus(self) -> str:
        return str(self.value("corpus"))


def _running_context() -> Any | None:
    """The running command's click context; None outside typer (`flatten.cli.quick` runs
    `flatten` without importing it)."""
    # typer (pinned) runs on its own copy of click: the running command's context is found there.
    click_globals = sys.modules.get("typer._click.globals")
    return None if click_globals is None else click_globals.get_current_context(silent=True)


def given_flags() -> set[str]:
    """The parameters of the running command given on its command line (not defaults)."""
    ctx = _running_context()
    if ctx is None:
        return set()
    from typer._click.core import ParameterSource

    quiet = (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP, None)
    return {name for name in ctx.params if ctx.get_parameter_source(name) not in quiet}


def flatten_settings(
    values: dict[str, Any], config: dict[str, Any], given: set[str] | None = None
) -> dict[str, Setting]:
    """The flatten settings of a command that takes one source on its flags (flatten, pack,
    index DIR): flag > the config's `flatten:` > default. `given`: the flags on the command
    line, when typer did not parse it (default: the running command's, `given_flags`)."""
    given = given_flags() if given is None else given
    return resolve({k: values[k] for k in FLATTEN_KEYS}, given, config)


def plan(values: dict[str, Any], config: dict[str, Any]) -> list[Job]:
    """The jobs of `ingest`: the flags' source, else each configured source; `UsageError` when
    there is none, or when two would load one corpus."""
    given = given_flags()
    names = {k: values.get(k) for k in SOURCE_KEYS}
    sources = config.get("sources") or []
    if any(values.get(k) is not None for k in SOURCE_KINDS):
        jobs = [_job(resolve(names, given, config), "flags")]
    elif sources:
        if "corpus" in given and len(sources) > 1:
            raise UsageError(
                f"--corpus names one corpus, and the config lists {len(sources)} sources",
                reason="bad-corpus", hint="give each entry of sources: its own corpus: NAME",
            )  # fmt: skip
        jobs = [_job(resolve(names, given, config, n), f"sources[{n}]")
                for n in range(len(sources))]  # fmt: skip
    else:
        raise UsageError(
            "nothing to ingest: give --root DIR, --repo URL or --url URL, or list sources: "
            "in docs-flatten.yaml (or the --config file)",
            reason="no-source", hint="ingest this folder: `docs-flatten ingest --root .`",
        )  # fmt: skip
    _refuse_shared_corpora(jobs)
    return jobs


def _job(settings: dict[str, Setting], where: str) -> Job:
    job = Job(where, settings)
    if job.value("corpus") is None:
        named = source_corpus(**{job.kind: job.source})
        settings["corpus"] = Setting(named, f"default ({_NAMED_BY[job.kind]})")
    return job


def _refuse_shared_corpora(jobs: list[Job]) -> None:
    seen: dict[str, Job] = {}
    for job in jobs:
        other = seen.setdefault(job.corpus, job)
        if other is not job:
            raise UsageError(
                f"{other.where} ({other.kind} {other.source}) and {job.where} ({job.kind} "
                f"{job.source}) would both load corpus {job.corpus!r}: each load is a whole "
                "snapshot, so the second would remove the first's documents",
                reason="shared-corpus", hint="give each of them its own corpus: NAME",
            )  # fmt: skip


def command_name(default: str) -> str:
    """The name the running command was called by (flatten or pack)."""
    ctx = _running_context()
    return (ctx.info_name if ctx is not None else None) or default


def rerun_with(flag: str, value: str | None = None) -> str:
    """This very command line with `flag` (and its value) set: a hint that works as printed,
    less any password or credentials it held (a hint is printed, logged and kept)."""
    from index.store import shown_argument

    args, out, skip = [shown_argument(a) for a in sys.argv[1:]], [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == flag:
            skip = value is not None
            continue
        if arg.startswith(flag + "="):
            continue
        out.append(arg)
    return shlex.join(["docs-flatten", *out, flag, *([value] if value is not None else [])])
