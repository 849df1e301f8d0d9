"""Documented placeholders: values that sit where a secret would but are not one.

Docs are full of `AKIAIOSFODNN7EXAMPLE`, `<your-token>`, `${DB_PASSWORD}` and `xxxx`. Redacting
them hides what the docs teach and buries the real finds in noise, so the scanner keeps them
and counts them instead, as gitleaks' allowlists do. Pure functions, no I/O.
"""

from __future__ import annotations

import re

# Keys and tokens that vendors publish in their own documentation.
KNOWN_EXAMPLES = (
    "AKIAIOSFODNN7EXAMPLE",  # AWS access key id
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # AWS secret access key
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",  # jwt.io's sample signature
)

# References to a secret kept elsewhere: shell and CI variables, templates, Terraform,
# CloudFormation, Windows and Maven-style substitutions.
_REFERENCE = re.compile(
    r"\$\{|\{\{|\$\(|^%[A-Za-z_]\w*%$|^@[A-Za-z_]\w*@$"
    r"|^\$(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)$"
    r"|^!(?:Ref|Sub|GetAtt|ImportValue|Join|Select|FindInMap|If|Base64)\b"
    r"|^(?:var|local|data|module|each|count|path|self|terraform)\.\w"
)
_ENCLOSED = re.compile(r"^(?:<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}|\([^()]*\))$")
_WORDS = re.compile(
    r"(?i)example|dummy|placeholder|change[-_ ]?me|changeit|redacted|sample|fake|x{4,}|\*{3,}"
    r"|\.{3}|…|not[-_ ]?(?:a[-_ ]?)?real|replace[-_ ]?(?:me|this|with)|insert[-_ ]?(?:your|here)"
    r"|foo[-_]?bar|lorem"
)
# `your-token`, `YOUR_API_KEY`, `mysecretpassword`, `password123`, `api_key_here`.
_STAND_IN = re.compile(
    r"(?i)^(?:(?:your|my|some|enter|insert|put|paste)[-_ ]?)*(?:own[-_ ]?)?"
    r"(?:(?:api|access|secret|auth|client|app|db|database|aws|github|gitlab|slack|npm|hf|bearer"
    r"|personal|private|session|refresh|super|admin|user|service|account)[-_ ]?)*"
    r"(?:password|passwd|pass|pwd|secret|token|key|apikey|credentials?|value|here|string)"
    r"(?:[-_ ]?(?:here|goes[-_ ]?here|value|\d{1,3}))*$"
)
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")  # DB_PASSWORD: a variable's name
_TOKEN_PREFIX = re.compile(
    r"^(?:github_pat_|gh[pousr]_|glpat-|xox[a-z]-|sk-(?:proj-|ant-)?|[sr]k_live_|npm_|hf_|SG\."
    r"|AKIA|ASIA|AIza)"
)
_SEPARATORS = re.compile(r"[-_.:/+=\s]+")
_RUNS = (
    "01234567890123456789",
    "abcdefghijklmnopqrstuvwxyz",
    "0123456789abcdefghijklmnopqrstuvwxyz",
)
_RUNS = _RUNS + tuple(run[::-1] for run in _RUNS)
# Values that fill a secret's slot without being one: flags, nulls, numbers, type names, words.
_NON_VALUE = re.compile(
    r"(?i)^(?:true|false|yes|no|on|off|null|nil|none|undefined|~|\[\]|\{\}|[|>][+-]?\d?"
    r"|<<[-~]?['\"]?\w+['\"]?|[-+]?\d{1,5}(?:\.\d+)?|str|string|bytes|int|bool|boolean|number|any"
    r"|object|optional\[.*|secretstr|required|optional|with|and|or|the|to|is|of|for|if|when"
    r"|from|in|on|as|not|only|flag|option|see|set|your|a|an|await|async|new|yield|lambda|function"
    r"|return|require|import|#[0-9a-f]{3,8})[,;]?$"
)
_CODE = re.compile(
    r"^[A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w*)+(?:[\[(].*)?|[\[(].*)$"  # a.b.c, f(...), env[...]
    r"|^_?(?:[A-Z][a-z]+){2,}$"  # a type: AttributeEventToken
    r"|^[(\[{](?!.*[)\]}]$)"  # the start of a code expression: `(lambda:`
)
# A type in code (`struct_token: Struct,`, `token: Option<Token>,`, `max_token: u32;`): capitalized
# words (`Xk3Lm9Pq` is no type) or a primitive, as the value of a field or argument.
_TYPE = re.compile(
    r"^&?(?:_?(?:[A-Z][a-z]+)+\d*(?:<.*>)?|[ui](?:8|16|32|64|128|size)|f32|f64|char)$"
)
# A variable named for what it holds (`token`, `identity_token`, `self.raw_password`): the
# keyword is a whole part of a lower-case name, so `Passw0rd1` or `hunter2` never match.
_NAME = re.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*$")
_NAME_PART = re.compile(
    r"(?:^|[_.])(?:password|passwd|pass|secret|token|key|auth|credentials?)(?:$|[_.])"
)
_LONGEST_WORDY = 256  # word and code rules only for short values; long ones are data


def is_placeholder(value: str) -> bool:
    """True for a documented stand-in: an example key, a reference, a template, `xxxx`."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    if any(example in v for example in KNOWN_EXAMPLES):
        return True
    if _REFERENCE.search(v) or _ENCLOSED.match(v):
        return True
    if len(v) <= _LONGEST_WORDY and (_WORDS.search(v) or _STAND_IN.match(v) or _ENV_NAME.match(v)):
        return True
    body = _TOKEN_PREFIX.sub("", v, count=1)
    return all(_trivial(part) for part in _SEPARATORS.split(body) if part)


# One to three plain lower-case words (`postgres`, `admin`, `super secret`, `my-app-secret`):
# what an example config writes where its reader's secret goes. Each must read as a word (a
# vowel, no five consonants in a row), so a random lower-case string is no stand-in.
_PLAIN_WORDS = re.compile(r"^[a-z]{1,16}(?:[-_. ][a-z]{1,16}){0,2}$")
_WORD_SEPARATOR = re.compile(r"[-_. ]")
_VOWEL = re.compile(r"[aeiouy]")
_CONSONANT_RUN = re.compile(r"[^aeiouy]{5}")


def is_plain_words(value: str) -> bool:
    """True for a typed value that is one to three plain lower-case words: an example's
    stand-in (`password: changeme`, `secret: postgres`), never a secret worth hiding: a real
    one has a digit, a capital or a symbol, or is a random string that reads as no word."""
    v = value.strip().strip("\"'`")
    if not _PLAIN_WORDS.match(v):
        return False
    return _all_words(_WORD_SEPARATOR.split(v))


def _all_words(parts: list[str]) -> bool:
    return all(_VOWEL.search(p) and not _CONSONANT_RUN.search(p) for p in parts)


# A camelCase name (`readPassword`, `userToken`): words, each but the first capitalized.
_CAMEL = re.compile(r"^[a-z]{2,}(?:[A-Z][a-z]{2,})+$")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+")


def is_non_value(value: str, *, quoted: bool = False, code: bool = False) -> bool:
    """What an assigned value can be besides a secret or a placeholder: a boolean, null, short
    number, colour, type name or plain word, or (unquoted) code: `os.environ["X"]`, `f()`,
    `identity_token`, `AttributeEventToken`. `code`: the value ended as a field or argument
    does (`,`, `;`, `)`), so one capitalized word (`Struct`) or a primitive names a type, and
    a camelCase name of words (`readPassword`) a variable.
    Neither redacted nor counted."""
    if len(value) > _LONGEST_WORDY:
        return False
    if _NON_VALUE.match(value):
        return True
    if quoted:
        return False
    if code and (_TYPE.match(value) or _is_camel_name(value)):
        return True
    return bool(_CODE.match(value) or (_NAME.match(value) and _NAME_PART.search(value)))


def _is_camel_name(value: str) -> bool:
    """`readPassword` as a field's value (`password: readPassword,`): a variable of the code."""
    return bool(_CAMEL.match(value)) and _all_words([p.lower() for p in _CAMEL_PART.findall(value)])


def _trivial(part: str) -> bool:
    """One repeated character, a run like `123456`/`abcdef`, or a short repeat like `abab`."""
    if len(set(part)) == 1:
        return True
    low = part.lower()
    if len(low) >= 3 and any(low in run for run in _RUNS):
        return True
    return any(
        len(low) >= 2 * period and low == (low[:period] * (len(low) // period + 1))[: len(low)]
        for period in (2, 3, 4)
    )
