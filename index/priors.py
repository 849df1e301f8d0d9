"""Document priors: pages most questions are not about rank below guides and feature pages.

A changelog mentions every feature, a contributing guide every tool, a test every function: by
words alone they match nearly any question, and they are rarely the page a person means. Each
kind of such page is a named `Prior`: how to recognise it from its path (and title), the factor
its score is multiplied by, and the query words that say the person asks for it after all (then
the prior does not apply). Pure functions of a path and a query; the search applies them.

The table is the setting: a prior's `weight` is 1.0 to turn it off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from index.paths import segments as path_segments
from index.text import TOKEN

# A version number (`0.28`, `v1.2.3`) in a query asks for release notes.
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)?(?![\w.])")


@dataclass(frozen=True)
class Prior:
    name: str
    weight: float  # the document's score is multiplied by this
    # A path matches when one of its segments (lowercased, extension dropped) is in `names`,
    # or a file name (lowercased) matches one of `files` (regular expressions, whole name).
    names: frozenset[str]
    files: tuple[str, ...]
    # Query words (lowercased, exact) that ask for this kind of page.
    asked_by: frozenset[str]
    asked_by_version: bool = False  # a version number in the query asks for it too


def _prior(name: str, weight: float, names: str, files: tuple[str, ...], asked_by: str,
           *, version: bool = False) -> Prior:  # fmt: skip
    return Prior(name, weight, frozenset(names.split()), files, frozenset(asked_by.split()),
                 version)  # fmt: skip


# Order matters: a path takes the first prior it matches.
PRIORS: tuple[Prior, ...] = (
    _prior(
        "changelog",
        0.5,
        "changelog changelogs changes history news releases release-notes release_notes "
        "releasenotes whatsnew whats-new whats_new",
        (r"(change|release)[-_ ]?(log|notes?)s?(\.\w+)?", r"(history|news|changes)(\.\w+)?"),
        "changelog changelogs release releases released news whatsnew breaking deprecated "
        "deprecation",
        version=True,
    ),
    _prior(
        "contributing",
        0.5,
        ".github contributing contribute contributors hacking maintainers governance "
        "pull_request_template issue_template",
        (r"contributing.*", r"(pull[-_]request|issue)[-_]template.*"),
        "contribute contributing contributor contributors maintainer maintainers governance",
    ),
    _prior(
        "code-of-conduct",
        0.3,
        "code_of_conduct code-of-conduct codeofconduct",
        (r"code[-_ ]?of[-_ ]?conduct.*",),
        "conduct harassment",
    ),
    _prior(
        "license",
        0.3,
        "license licenses licence licences copying notice",
        (r"(license|licence|copying|notice)(\.\w+)?",),
        "license licence licensing licensed copyright",
    ),
    _prior(
        "proposal",
        0.6,
        "proposal proposals rfc rfcs adr adrs design-docs design_docs keps enhancements",
        (r"\d{3,4}[-_].*(proposal|rfc|adr).*",),
        "proposal proposals proposed rfc rfcs adr adrs kep",
    ),
    _prior(
        "test",
        0.5,
        "test tests __tests__ e2e testdata fixtures",
        (r".*_test\.\w+", r"test_.*\.\w+", r".*\.(test|spec)\.\w+"),
        "test tests testing e2e fixture fixtures",
    ),
    _prior(
        "generated",
        0.8,
        "generated _generated autogen _autosummary",
        (r".*\.generated\.\w+", r"zz_generated.*"),
        "generated reference command commands cli flag flags",
    ),
)


def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns) or "(?!)")


_FILES = [(prior, _any_of(prior.files)) for prior in PRIORS]
_ANY_NAME = frozenset().union(*(p.names for p in PRIORS))
_ANY_FILE = _any_of(tuple(f for p in PRIORS for f in p.files))


@lru_cache(maxsize=65536)
def prior_of(source: str) -> Prior | None:
    """The prior a document's path carries, if any (the first of `PRIORS` it matches)."""
    segments = [s.lower() for s in path_segments(source)]
    if not segments:
        return None
    stems = {s.rsplit(".", 1)[0] if "." in s[1:] else s for s in segments}
    name = segments[-1]
    if stems.isdisjoint(_ANY_NAME) and not _ANY_FILE.fullmatch(name):
        return None  # most pages: one set test and one regex
    for prior, files in _FILES:
        if not stems.isdisjoint(prior.names) or files.fullmatch(name):
            return prior
    return None


def asked_for(query: str) -> frozenset[str]:
    """The priors a query lifts: it names that kind of page (or gives a version number)."""
    words = {w.lower() for w in TOKEN.findall(query)}
    version = bool(_VERSION.search(query))
    return frozenset(
        p.name for p in PRIORS if words & p.asked_by or (version and p.asked_by_version)
    )
