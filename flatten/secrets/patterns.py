"""The built-in one-line secret patterns: vendor token formats and `key = value` assignments.

Every pattern stays inside one line (no class here matches a line break), so a redaction never
moves a line. A pattern with a value group (`secret`, or `dq`/`sq`/`bare` for a quoted or bare
value) redacts that group only and keeps the key, scheme, user and host around it. Multi-line
structures (PEM blocks, Kubernetes Secrets) live in `flatten.secrets.blocks`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from flatten.userinfo import userinfo

# Every character that str.splitlines() breaks on: none may sit inside a one-line match.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
LINE_BREAK_CLASS = r"\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"  # the same, inside a regex [...]
_NL = LINE_BREAK_CLASS

# A value after `key:` / `key =`: the inside of quotes, or one bare token.
_QUOTED = rf"""(?:"(?P<dq>[^"{_NL}]+)"|'(?P<sq>[^'{_NL}]+)')"""
_VALUE = rf"""(?:{_QUOTED}|(?P<bare>[^\s"'`]+))"""
_KEY = (
    r"[\w.-]*?(?:password|passwd|passphrase|secret|token|credentials?"
    r"|(?:api|access|secret|private|auth|account|master|signing|encryption|client)[_.-]?key)"
)
_SEP = r"[ \t]*(?::=|=>|[:=])[ \t]*(?!=)"
_LINE_HEAD = (  # indentation, a YAML list dash, a commented-out line, a shell/Dockerfile verb
    r"^[ \t]*(?:-[ \t]+)?(?:(?:#|//|;)(?=[\w\"']))?"
    r"(?:(?:export|set|readonly|local|ENV|ARG|const|let|var|val)[ \t]+)?"
)
_URL_PASSWORD = userinfo("\"'`<>", password=True)  # the rule credentials are stripped by
_CLI_VALUE = rf"""(?:{_QUOTED}|(?P<bare>[^\s"'`-][^\s"'`]*))"""


@dataclass(frozen=True)
class TokenPattern:
    """A pattern's regexes are kept as written and compile when first searched: most runs (and
    every command that only prints) meet few of the patterns' needles, and compiling them all
    cost about a third of an empty flatten's start-up."""

    kind: str
    needles: tuple[str, ...]  # one must occur in the text (lower-cased text when `fold`)
    source: str  # the regex, as written
    fold: bool = False
    # Where a slow pattern may match, found fast in the case-folded text; the pattern then runs
    # on those lines only (a pass of a literal-led regex costs a fraction of a full match).
    trigger_source: str | None = None
    # On a trigger's line, what any match of this pattern holds (in the lower-cased line): a
    # line without it is skipped before the pattern runs there (RE2, ASCII lines only).
    line_check: str | None = None
    assignment: bool = False  # a bare value may be a non-value (`true`) or code (`os.environ`)
    context: tuple[str, ...] = ()  # one must occur shortly before the match (`curl` for `-u`)
    # The value is whatever its writer typed (a password, not a vendor's token format), so one
    # to three plain lower-case words there are an example's stand-in (`password: postgres`).
    typed: bool = False

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.source)

    @cached_property
    def trigger(self) -> re.Pattern[str] | None:
        return re.compile(self.trigger_source) if self.trigger_source else None


def _p(
    kind: str, needles: tuple[str, ...], regex: str, *, trigger: str | None = None, **kw: object
) -> TokenPattern:
    return TokenPattern(kind, needles, regex, trigger_source=trigger, **kw)  # type: ignore[arg-type]


_ASSIGN_NEEDLES = ("pass", "secret", "token", "key", "credential")
# Every assignment pattern below ends its key with one of these words, then a separator.
_ASSIGN_WORD = r"(?:password|passwd|passphrase|secret|token|credentials?|key)"
_ASSIGN_TRIGGER = rf"{_ASSIGN_WORD}[\"']?[ \t]*[:=]"

# Order is priority: where two matches overlap, the earlier pattern wins.
PATTERNS: tuple[TokenPattern, ...] = (
    _p("aws-access-key", ("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    _p("aws-secret-key", ("aws_secret", "AWS_SECRET", "SecretAccessKey"),
       r"(?i)(?:aws_secret_access_key|secretaccesskey)[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?"
       r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"),
    _p("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
       r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    _p("gitlab-token", ("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    _p("slack-token", ("xox",), r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    # A webhook's path is its credential: whoever has the URL posts to the channel.
    _p("slack-webhook", ("hooks.slack.com",),
       r"\bhooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/\-]{20,})"),
    _p("google-api-key", ("AIza",), r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    _p("stripe-key", ("_live_",), r"\b(?:sk|rk)_live_[0-9A-Za-z]{16,}\b"),
    _p("openai-key", ("sk-",), r"\bsk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_\-]{32,}"),
    _p("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    _p("huggingface-token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b"),
    _p("sendgrid-key", ("SG.",), r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    _p("jwt", ("eyJ",), r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    _p("azure-storage-key", ("accountkey", "sharedaccesskey"),
       r"(?i)\b(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*(?P<secret>[^;\s\"'`]+)", fold=True),
    _p("azure-sas-signature", ("sig=",), r"[?&]sig=(?P<secret>[^&\s\"'`#<>]+)"),
    _p("url-password", ("://",),
       rf"\b[A-Za-z][A-Za-z0-9+.-]{{1,20}}://{_URL_PASSWORD}",
       trigger=r"://[^\s:/?#\"'`<>\[\]]*:(?:[^\s/?#\"'`<>]*|[^\s@\"'`<>]{0,260})@", typed=True),
    _p("auth-header", ("authorization",),
       r"(?i)\bauthorization[ \t]*:[ \t]*(?:bearer|basic|token|bot)[ \t]+"
       r"(?P<secret>[^\s\"'`]+)", fold=True, trigger="authorization", typed=True),
    _p("npmrc-auth", ("_auth", "_password"),
       rf"(?m)(?:^[ \t]*|:)(?:_authToken|_auth|_password)[ \t]*=[ \t]*{_VALUE}",
       trigger=r"_auth(?:token)?[ \t]*=|_password[ \t]*=", typed=True),
    _p("cli-password", ("mysql", "mariadb"), r"(?<=[ \t])-p(?P<secret>[^\s\"'`-][^\s\"'`]*)",
       context=("mysql", "mariadb"), trigger="-p", typed=True),
    _p("cli-password", ("login", "sshpass"), rf"(?<=[ \t])-p[ \t]+{_CLI_VALUE}",
       context=("login", "sshpass"), trigger="-p", typed=True),
    _p("cli-password", ("curl",),
       r"(?<!\S)(?:-u[ \t]*|--user[ \t]+|--user=)[\"']?[^\s:\"'`]*:(?P<secret>[^\s\"'`]+)",
       assignment=True, context=("curl",), trigger="-u", typed=True),
    _p("cli-password", ("--",),
       r"(?i)(?<!\S)--(?:[\w-]*-)?(?:password|passwd|token|secret|api-?key|client-secret)"
       rf"[ \t]+{_CLI_VALUE}", fold=True, assignment=True,
       trigger=r"--(?:[\w-]*-)?(?:password|passwd|token|secret|api-?key|client-secret)[ \t]",
       typed=True),
    # `password: x` at a line start: the value is the rest of the line (bar a comment), and a
    # line that goes on in words is prose (a docstring's `password: the user's password`).
    _p("password-assignment", _ASSIGN_NEEDLES,
       rf"(?im){_LINE_HEAD}[\"']?{_KEY}[\"']?[ \t]*:[ \t]*(?:{_QUOTED}"
       rf"|(?P<bare>[^\s\"'`#][^\s\"'`]*)(?=[ \t]*(?:[ \t]\#[^{_NL}]*)?$))",
       fold=True, assignment=True, trigger=_ASSIGN_TRIGGER,
       line_check=rf"{_ASSIGN_WORD}[\"']?[ \t]*:", typed=True),
    # `db.password=x`, `export DB_PASSWORD=x`, `password = "x"`, `token := x` at a line start.
    _p("password-assignment", _ASSIGN_NEEDLES,
       rf"(?im){_LINE_HEAD}[\"']?{_KEY}[\"']?[ \t]*(?::=|=>|=)[ \t]*(?!=){_VALUE}",
       fold=True, assignment=True, trigger=_ASSIGN_TRIGGER,
       line_check=rf"{_ASSIGN_WORD}[\"']?[ \t]*:?=", typed=True),
    # Mid-line: a quoted value (`"password": "x"`, `connect(password="x")`) ...
    _p("password-assignment", _ASSIGN_NEEDLES,
       rf"""(?i)(?<![\w.-])["']?{_KEY}["']?{_SEP}{_QUOTED}""",
       fold=True, assignment=True, trigger=_ASSIGN_TRIGGER,
       line_check=rf"""{_ASSIGN_WORD}["']?[ \t]*(?::=|=>|[:=])[ \t]*["']""", typed=True),
    # ... or `key=value` with no spaces (`--password=x`, `?token=x&`, `PGPASSWORD=x psql`).
    _p("password-assignment", _ASSIGN_NEEDLES,
       rf"(?im)(?:(?<=[\s?&;,(])|^)(?:--?)?{_KEY}=(?!=)(?P<bare>[^\s\"'`&]+)",
       fold=True, assignment=True, trigger=_ASSIGN_TRIGGER,
       line_check=rf"{_ASSIGN_WORD}=[^= \t\"'`&]", typed=True),
)  # fmt: skip

VALUE_GROUPS = ("secret", "password", "dq", "sq", "bare")
