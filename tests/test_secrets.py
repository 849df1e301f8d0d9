"""The secret scanner: what it redacts, the placeholders it keeps (and counts), private-key
blocks that never swallow a file, the `redaction:` config, and property tests that it never
touches text outside a match nor moves a line."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flatten.errors import UsageError
from flatten.secrets import RedactionRules, find_secrets, redact
from tests.conftest import assert_clean_failure, run_cli, write

MARK = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
# Realistic-looking values (random, not documented examples).
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsInJvbGUiOiJhZG1pbiJ9"
    ".kq3Zr9Vt7Lm2Xp8Wc4Nb6Hd1Fs5Gy0Ju3Ke7Ta9Qo2M"
)
ACCOUNT_KEY = (
    "q8Zx3Kv9LmN2pQ7rT1sW4yB6dF0hJ5kA8cE2gH4jM6nP9rS1tV3wX5zY7bD0fG2hK4mN6pQ8rT0vW2xZ4aC6eG=="
)
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
SENDGRID = "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"
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"


def redacted(text: str, rules: RedactionRules | None = None) -> str:
    result = redact(text, rules) if rules else redact(text)
    assert len(result.text.split("\n")) == len(text.split("\n"))
    return result.text


# --- item 5: secrets that passed unredacted -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        (f"Authorization header: {JWT}", "kq3Zr9Vt", "Authorization header: "),
        (f"conn = DefaultEndpointsProtocol=https;AccountName=a;AccountKey={ACCOUNT_KEY};"
         "EndpointSuffix=core.windows.net", "q8Zx3Kv9", ";EndpointSuffix=core.windows.net"),
        ("https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sr=b&"
         "sig=Zk3mQ9vR2tX7pL4nB8wY1cF6hJ0sD5gA%2BkE3uI%3D&se=2030", "Zk3mQ9", "&se=2030"),
        ("DATABASE_URL=postgres://admin:S3cr3tPw@db.internal:5432/app", "S3cr3tPw",
         "postgres://admin:"),
        ("git clone https://u:hunter22@git.example.org/r.git", "hunter22",
         "https://u:[REDACTED:url-password]@git.example.org/r.git"),
        (f"token={HF}", HF, "token="),
        (f"SENDGRID_API_KEY: {SENDGRID}", "Wx8zAb1", "SENDGRID_API_KEY: "),
        ("//registry.npmjs.org/:_authToken=a1b2c3d4e5f6a7b8c9d0", "a1b2c3d4", "/:_authToken="),
    ],
)  # fmt: skip
def test_vendor_tokens_and_connection_secrets_are_redacted(text, secret, kept):
    out = redacted(text)
    assert secret not in out and kept in out and MARK.search(out)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("db:\n  password: hunter22\n", "hunter22"),  # YAML
        ("  client_secret: 'Qz7-hunter22'  # rotate yearly\n", "Qz7-hunter22"),
        ('resource "aws_db_instance" "x" {\n  password = "tf-hunter22"\n}\n', "tf-hunter22"),
        ("spring.datasource.password=props-hunter22\n", "props-hunter22"),  # .properties
        ("[db]\npasswd = ini-hunter22\n", "ini-hunter22"),  # .ini
        ("export DB_PASSWORD=sh-hunter22\n", "sh-hunter22"),
        ("PGPASSWORD=pg-hunter22 psql -h db\n", "pg-hunter22"),
        ("mysql -u root -pmy-hunter22 shop\n", "my-hunter22"),
        ("curl -u alice:curl-hunter22 https://api.internal/v1\n", "curl-hunter22"),
        ("curl https://api.internal \\\n  --user alice:cont-hunter22\n", "cont-hunter22"),
        ('{"user": "a", "api_key": "json-hunter22"}\n', "json-hunter22"),
        ("tool login --token tok-hunter22\n", "tok-hunter22"),
        ("access_token: at-hunter22\n", "at-hunter22"),
        ("apiKey: ak-hunter22\n", "ak-hunter22"),
    ],
)  # fmt: skip
def test_password_secret_and_token_assignments_are_redacted_keeping_the_key(text, secret):
    out = redacted(text)
    assert secret not in out and "[REDACTED:" in out
    key = re.split(r"[:=]| -p| --token", text.strip().splitlines()[-1])[0]
    assert key in out  # the key (and the line around it) stays readable


SECRET_MANIFEST = """\
apiVersion: v1
kind: Secret
metadata:
  name: db
type: Opaque
data:
  password: aHVudGVyMjI=
  username: YWRtaW4=
stringData:
  config.yaml: |
    url: https://db.internal
    key: sd-hunter22
  token: "st-hunter22"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: production
"""


def test_kubernetes_secret_values_are_redacted_only_in_secret_documents():
    out = redacted(SECRET_MANIFEST)
    for secret in ("aHVudGVyMjI=", "YWRtaW4=", "sd-hunter22", "st-hunter22", "db.internal"):
        assert secret not in out
    assert "  password: [REDACTED:k8s-secret-data]" in out
    assert "  name: db\n" in out and "  mode: production\n" in out  # metadata, ConfigMap kept


def test_kubernetes_secret_inside_a_markdown_fence_is_redacted():
    doc = "# Deploy\n\n```yaml\n" + SECRET_MANIFEST.split("---")[0] + "```\n\nThen apply it.\n"
    out = redacted(doc)
    assert "aHVudGVyMjI=" not in out and out.endswith("```\n\nThen apply it.\n")


# --- item 5: placeholders are kept, and counted ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
         "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("password: xxxxxxxx", "xxxxxxxx"),
        ("token: 1234567890", "1234567890"),
        ("secret: abcdef", "abcdef"),
        ("password: aaaaaaaa", "aaaaaaaa"),
        ("token: <your-token>", "<your-token>"),
        ("api_key: ${API_KEY}", "${API_KEY}"),
        ("export TOKEN=$GITHUB_TOKEN", "$GITHUB_TOKEN"),
        ('password: "{{ .Values.db.password }}"', "{{ .Values.db.password }}"),
        ("password: changeme", "changeme"),
        ("client_secret: example-secret-value", "example-secret-value"),
        ("token: dummy", "dummy"),
        ("postgres://user:${DB_PASSWORD}@localhost/app", "${DB_PASSWORD}"),
        ("token: ghp_" + "x" * 36, "ghp_" + "x" * 36),
        ("-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----", "\n...\n"),
        ("-----BEGIN PRIVATE KEY-----\n(snip)\n-----END PRIVATE KEY-----", "(snip)"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\n...\n\nThe key above is elided.", "..."),
    ],
)  # fmt: skip
def test_documented_placeholders_are_kept_and_counted(text, value):
    result = redact(text)
    assert result.text == text and value in result.text
    assert result.total == 0 and sum(result.placeholders.values()) == 1


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("password: postgres", "postgres"),
        ('DB_PASSWORD="admin"', "admin"),
        ("password: letmein", "letmein"),
        ('password = "correct horse battery"', "correct horse battery"),
        ("client_secret: my-app-secret", "my-app-secret"),
        ('secret_key: "open sesame"', "open sesame"),
        ("postgres://postgres:postgres@localhost:5432/app", "postgres"),
        ("curl -u admin:admin https://api.local/v1", "admin"),
        ("mysql -u root -proot shop", "root"),
        ("Authorization: Bearer sometoken", "sometoken"),
    ],
)  # fmt: skip
def test_plain_lower_case_words_in_an_example_config_are_stand_ins(text, value):
    result = redact(text)
    assert result.text == text and value in result.text
    assert result.total == 0 and sum(result.placeholders.values()) == 1


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password: kqzvbxjwmrtpl", "kqzvbxjwmrtpl"),  # letters, but no word
        ("password: Hunter", "Hunter"),  # a capital
        ("password: hunter2", "hunter2"),  # a digit
        ("password: four plain words here", None),  # prose: not a value at all
        ("token: xkcdqwrtz", "xkcdqwrtz"),
        ("password: correct-horse-battery-staple", "correct-horse-battery-staple"),  # four
    ],
)  # fmt: skip
def test_values_that_are_not_plain_words_are_still_redacted(text, secret):
    out = redact(text).text
    if secret is None:
        assert out == text
    else:
        assert secret not in out and "[REDACTED:" in out


def test_a_camel_case_variable_as_a_fields_value_is_code():
    text = "module.exports = {\n  password: readPassword,\n  otp: readOTP,\n}\n"
    assert redact(text).text == text and not redact(text).counts
    assert "kqPzwRtx" not in redact("  password: kqPzwRtx,\n").text  # reads as no words


def test_a_stand_in_word_rule_never_keeps_a_vendor_token():
    # Plain words after the vendor's prefix: the format says token, whatever its letters.
    assert "helloworld" not in redact("slack: xoxb-helloworld-tokenvalue").text


@pytest.mark.parametrize(
    "text",
    [
        "password_length: 16\nenabled: true\ntoken: true\nmax_tokens: 100\n",
        "class Login:\n    password: str\n    token: Optional[str] = None\n",
        '    """\n    password: The user\'s password, never logged.\n    """\n',
        "client = WebClient(token=token)\nself.allow_credentials = allow_credentials\n",
        "key: value\nsecrets: inherit\n",
        "Use `sk-...` placeholders; AKIA is a prefix.\n",
    ],
)
def test_code_and_prose_around_secret_words_are_neither_redacted_nor_counted(text):
    result = redact(text)
    assert result.text == text and not result.counts and not result.placeholders


# --- item 7: private keys never swallow the rest of a file -----------------------------------


def test_a_pem_header_in_a_sentence_redacts_its_line_only():
    doc = (
        "# Keys\n\nA key file starts with -----BEGIN PRIVATE KEY----- and more.\n\n"
        "# Rotation\n\nRotate keys yearly.\n\n# Storage\n\nKeep keys in a vault.\n"
    )
    out = redacted(doc)
    assert out == doc.replace("-----BEGIN PRIVATE KEY----- and more.", "[REDACTED:private-key]")


def test_a_real_key_block_is_redacted_whole_and_keeps_its_line_count():
    block = (
        "-----BEGIN RSA PRIVATE KEY-----\n" + f"{KEY_BODY}\n" * 3 + "-----END RSA PRIVATE KEY-----"
    )
    doc = f"before\n  {block}  tail\nafter\n"
    out = redacted(doc)
    assert out == "before\n  [REDACTED:private-key]\n\n\n\n  tail\nafter\n"


def test_a_key_in_a_json_string_or_indented_yaml_is_redacted():
    escaped = (
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + KEY_BODY
        + '\\n-----END PRIVATE KEY-----\\n"}'
    )
    yaml = (
        "tls:\n  key: |\n    -----BEGIN EC PRIVATE KEY-----\n"
        f"    {KEY_BODY}\n    -----END EC PRIVATE KEY-----\nnext: 1\n"
    )
    assert KEY_BODY not in redacted(escaped) and redacted(escaped).endswith('\\n"}')
    assert redacted(yaml) == "tls:\n  key: |\n    [REDACTED:private-key]\n\n\nnext: 1\n"


def test_a_truncated_key_redacts_its_header_line_and_body_lines_one_by_one():
    doc = f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n{KEY_BODY}\n\n# Next section\n"
    out = redacted(doc)
    assert KEY_BODY not in out and out.endswith("\n\n# Next section\n")
    assert all(f.kind == "private-key" and "\n" not in doc[f.start : f.end]
               for f in find_secrets(doc))  # fmt: skip


# --- the redaction: config --------------------------------------------------------------------


def test_config_patterns_redact_and_allow_entries_keep():
    rules = RedactionRules.from_config({
        "patterns": [{"name": "acme-key", "regex": r"acme_[0-9a-f]{16}"},
                     {"name": "internal", "regex": r"internal-pw: (?P<secret>\S+)"}],
        "allow": ["hunter22", {"regex": "^test-"}, {"value": "docs-only-pw"}],
    })  # fmt: skip
    text = (
        "key acme_0123456789abcdef\ninternal-pw: zz9Top\npassword: hunter22\n"
        "token: test-abc987\npassword: docs-only-pw\npassword: real-Qz7\n"
    )
    result = redact(text, rules)
    assert result.counts == {"acme-key": 1, "internal": 1, "password-assignment": 1}
    assert result.placeholders == {"password-assignment": 3}
    assert "internal-pw: [REDACTED:internal]" in result.text and "real-Qz7" not in result.text


def test_a_config_pattern_that_spans_lines_redacts_each_line_separately():
    rules = RedactionRules.from_config({"patterns": [{"name": "blob", "regex": r"BLOB\[[^\]]*\]"}]})
    text = "a BLOB[x1\ny2\nz3] b\n"
    assert redact(text, rules).text == "a [REDACTED:blob]\n[REDACTED:blob]\n[REDACTED:blob] b\n"


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ("nope", "redaction: expected a mapping"),
        ({"enabled": False}, "redaction.enabled: not a setting"),
        ({"patterns": {"name": "x"}}, "redaction.patterns: expected a list"),
        ({"patterns": [{"name": "ok", "regex": "a+"}, {"regex": "b"}]},
         "redaction.patterns[1].name: empty or missing"),
        ({"patterns": [{"name": "Bad Name", "regex": "b"}]}, "redaction.patterns[0].name"),
        ({"patterns": [{"name": "x", "regex": "(unclosed"}]},
         "redaction.patterns[0].regex: does not compile"),
        ({"patterns": [{"name": "x", "regex": "a*"}]}, "matches the empty string"),
        ({"patterns": [{"name": "x", "regex": "a", "flags": "i"}]}, "redaction.patterns[0].flags"),
        ({"allow": ["ok", 3]}, "redaction.allow[1]"),
        ({"allow": [{"regex": "["}]}, "redaction.allow[0].regex: does not compile"),
    ],
)  # fmt: skip
def test_config_errors_name_the_entry(section, named):
    with pytest.raises(UsageError) as caught:
        RedactionRules.from_config(section)
    assert named in caught.value.message and caught.value.reason == "bad-config"


# --- through the real flatten path --------------------------------------------------------------


def test_flatten_redacts_keeps_placeholders_and_reports_both(tmp_path):
    write(tmp_path / "docs", {
        "setup.md": "# Setup\n\nConnect with postgres://admin:S3cr3tPw@db:5432/app\n\n"
                    "## Example\n\nexport AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n"
                    "export TOKEN=<your-token>\n",
        "keys.md": "# Keys\n\nA key starts with -----BEGIN PRIVATE KEY----- as its first line.\n\n"
                   "# Rotation\n\nRotate yearly.\n\n# Storage\n\nUse a vault.\n",
    })  # fmt: skip
    report_path = tmp_path / "report.json"
    result = run_cli("flatten", "--root", tmp_path / "docs", "--report", report_path)
    assert result.code == 0, result.stderr
    records = result.records()
    keys = [r for r in records if r["source"] == "keys.md"]
    assert [r["title"] for r in keys] == ["Keys", "Rotation", "Storage"]
    assert [(r["startLine"], r["endLine"]) for r in keys] == [(1, 3), (5, 7), (9, 11)]
    setup = "".join(r["content"] for r in records if r["source"] == "setup.md")
    assert "S3cr3tPw" not in setup and "AKIAIOSFODNN7EXAMPLE" in setup and "<your-token>" in setup
    report = json.loads(report_path.read_text())
    assert report["redactions"]["byRule"] == {"private-key": 1, "url-password": 1}
    kept = report["redactions"]["placeholdersKept"]
    assert kept == {"aws-access-key": 1, "password-assignment": 1}
    assert "placeholders kept (not secrets): " in result.stderr


def test_flatten_reads_the_redaction_section_of_the_config(tmp_path):
    write(
        tmp_path / "docs", {"a.md": "# A\n\nticket acme_0123456789abcdef and password: hunter22\n"}
    )
    config = tmp_path / "docs-flatten.yaml"
    config.write_text(
        "redaction:\n  patterns:\n    - name: acme-key\n      regex: 'acme_[0-9a-f]{16}'\n"
        "  allow:\n    - hunter22\n"
    )
    result = run_cli("flatten", "--root", tmp_path / "docs", cwd=tmp_path)
    assert result.code == 0, result.stderr
    content = result.records()[0]["content"]
    assert "[REDACTED:acme-key]" in content and "password: hunter22" in content


def test_a_bad_redaction_section_is_a_usage_error_naming_the_entry(tmp_path):
    write(tmp_path / "docs", {"a.md": "# A\n"})
    config = tmp_path / "c.yaml"
    config.write_text("redaction:\n  patterns:\n    - name: x\n      regex: '(oops'\n")
    for command in (["flatten", "--root"], ["index", "--store", tmp_path / "s"]):
        result = run_cli(*command, tmp_path / "docs", "--config", config)
        assert_clean_failure(result, 2, "redaction.patterns[0].regex")


# --- properties: the scanner never touches text outside a match, never moves a line ----------

FRAGMENTS = [
    "\n", "\r\n", " ", "\t", "  ", ":", "=", '"', "'", "#", "-", "@", "/", "\\n", "\u2028",
    "password", "secret: ", "token=", "api_key = ", "export DB_PASSWORD=", "--password ",
    "mysql -p", "curl -u a:", "://", "https://u:", "@host", "?sig=", "AccountKey=", "_authToken=",
    "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
    KEY_BODY, "...", "(snip)", "kind: Secret\n", "data:\n", "stringData:\n", "  k: ", "|\n",
    "---\n", "```\n", "eyJhbGciOiJIUzI1NiJ9", ".eyJzdWIiOiJ4eHh4In0", ".c2lnbmF0dXJl",
    "AKIA", "EXAMPLE", "ghp_", "hf_", "SG.", "npm_", "xxxx", "${X}", "<your-token>",
    "[REDACTED:x]", "hunter22", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
]  # fmt: skip
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=40).map(
    "".join
)


def _replaced(text: str) -> str:
    """The text with each redacted finding replaced as the scanner promises, built independently."""
    out, done = [], 0
    for f in find_secrets(text):
        if not f.placeholder:
            span = text[f.start : f.end]
            breaks = "".join(c for c in span if c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
            out += [text[done : f.start], f"[REDACTED:{f.kind}]", breaks]
            done = f.end
    return "".join(out) + text[done:]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_redaction_changes_nothing_outside_its_matches_and_moves_no_line(text):
    result = redact(text)
    findings = find_secrets(text)
    # Findings are in order and disjoint; only a key block spans lines.
    for a, b in itertools.pairwise(findings):
        assert a.end <= b.start
    for f in findings:
        span = text[f.start : f.end]
        if len(span.splitlines()) > 1 or "\n" in span:
            assert f.kind == "private-key" and span.startswith("-----BEGIN ")
            assert "-----END " in span
    # Outside the matches the text is untouched, and the line count (either way of counting) holds.
    assert result.text == _replaced(text)
    assert len(result.text.split("\n")) == len(text.split("\n"))
    assert len(result.text.splitlines()) == len(text.splitlines())
    # Line by line, an output line is its input line with some pieces swapped for markers
    # (or, inside a key block, what followed the END marker on the block's last line).
    inside_block = set()
    for f in findings:
        first = text.count("\n", 0, f.start)
        inside_block.update(range(first + 1, first + 1 + text.count("\n", f.start, f.end)))
    for n, (before, after) in enumerate(
        zip(text.split("\n"), result.text.split("\n"), strict=True)
    ):
        if n in inside_block:
            assert before.endswith(after)
            continue
        pieces = MARK.split(after)
        pattern = "(.+?)".join(re.escape(p) for p in pieces)
        assert re.fullmatch(pattern, before, re.S), (before, after)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_redacting_twice_changes_nothing_more(text):
    once = redact(text).text
    assert redact(once).text == once


def test_hostile_inputs_finish_and_keep_their_lines():
    """Inputs built to make regexes backtrack; a subprocess bounds any hang (no timing asserted)."""
    script = r"""
from flatten.secrets import redact
n = 100_000
cases = ["eyJ-" * (n // 4), "password: a" + " " * n + "b", 'password: "' + "a" * n,
         "-----BEGIN PRIVATE KEY-----\n" * 5000, "-----BEGIN PRIVATE KEY-----\n" + "(" * n,
         "-----BEGIN PRIVATE KEY-----\n" + ("A" * 64 + "\n") * 5000,
         "kind: Secret\n" + "data:\n  k: v\n" * 20000, "kind: Secret\ndata:\n  a" + " \t" * n,
         "x://u:" + "@" * n, "mysql " * 20000 + "-pabc", "password: " + "secret" * 20000 + "!",
         "token=" + "key_" * 30000 + "!", "a.b-" * 25000 + "token=1", "\"password\": " * 20000]
for text in cases:
    assert redact(text).text.count("\n") == text.count("\n")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.stdout.strip() == "ok", done.stderr


def test_a_slack_webhook_urls_path_is_redacted_and_its_host_kept():
    url = "https://hooks.slack.com/services/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"
    out = redact(f"notify:\n  url: {url}\n").text
    assert "x9Kq2mZr7TbW4nLp8VcY3sQd" not in out and "T04ABCD1E" not in out
    assert "https://hooks.slack.com/services/[REDACTED:" in out
