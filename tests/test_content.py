"""Reading files: binary by content, encodings, LFS pointers, minified bundles, secrets."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flatten.classify import NOISE_DIRS, classify, matches_any, noise_dir, path_skip_reason
from flatten.content import Unreadable, decode, looks_minified, read_snapshot
from flatten.secrets import redact
from tests.conftest import MINIFIED_BUNDLE


def test_nul_byte_means_binary():
    with pytest.raises(Unreadable) as err:
        decode(b"PK\x03\x04\x00\x00binary")
    assert err.value.reason == "binary"


def test_typescript_is_text_not_binary():
    assert classify("src/app.ts").lang == "typescript"
    assert path_skip_reason("src/app.ts") is None
    assert decode(b"export const x: number = 1;\n").text.startswith("export")


def test_legacy_8bit_text_is_decoded_as_cp1252_with_a_note():
    decoded = decode("Caf\u00e9 cr\u00e8me\n".encode("cp1252"))
    assert decoded.text == "Café crème\n"
    assert decoded.note and decoded.note.startswith("not-utf8")


def test_mixed_encoding_keeps_the_utf8_and_notes_the_bad_bytes():
    decoded = decode("naïve ".encode() + b"\xff" + " résumé\n".encode())
    assert "naïve" in decoded.text and "résumé" in decoded.text
    assert decoded.note and decoded.note.startswith("mixed-encoding: 1")


def test_crlf_becomes_lf_and_a_bom_is_dropped():
    assert decode(b"\xef\xbb\xbfa\r\nb\r\n").text == "a\nb\n"


def test_lfs_pointer_is_recognised():
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n"
    with pytest.raises(Unreadable) as err:
        decode(pointer)
    assert err.value.reason == "lfs-pointer"


def test_minified_bundle_is_detected():
    assert looks_minified(MINIFIED_BUNDLE * 80)
    assert not looks_minified("line\n" * 2000)
    assert looks_minified('{"key":"value","n":[1,2,3]},' * 400)  # minified JSON


def test_a_long_paragraph_on_one_line_is_prose_not_minified():
    paragraph = "Cells respond to the treatment within hours, as the assay shows. " * 100
    assert "\n" not in paragraph and len(paragraph) > 4096
    assert not looks_minified(paragraph)


def test_read_snapshot_enforces_the_size_cap(tmp_path):
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(Unreadable) as err:
        read_snapshot(str(tmp_path), "big.md", 1024)
    assert err.value.reason == "too-large"


def test_read_snapshot_names_a_missing_file(tmp_path):
    with pytest.raises(Unreadable) as err:
        read_snapshot(str(tmp_path), "gone.md", 1024)
    assert err.value.reason == "missing"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("node_modules/x/README.md", "vendored"), ("vendor/lib/a.go", "vendored"),
        (".terraform/modules/x.tf", "vendored"), ("dist/index.md", "build-output"),
        ("package-lock.json", "lockfile"), ("go.sum", "lockfile"),
        ("app.min.js", "minified"), ("app.js.map", "sourcemap"),
        ("prod.tfstate", "tfstate"), ("prod.tfstate.backup", "tfstate"),
        (".env", "secret-file"), (".env.production", "secret-file"),
        ("certs/tls.key", "secret-file"),
        ("home/.kube/config", "secret-file"), ("deploy/id_rsa", "secret-file"),
        ("logo.png", "binary"),
    ],
)  # fmt: skip
def test_noise_is_skipped_by_path_with_a_reason(path, reason):
    assert path_skip_reason(path) == reason


@pytest.mark.parametrize("path", [".env.example", "docs/keys.md", "src/credentials.py", "a.ts"])
def test_lookalikes_are_not_skipped(path):
    assert path_skip_reason(path) is None


def test_shebang_gives_the_language_of_an_extensionless_script():
    assert classify("bin/deploy", "#!/usr/bin/env bash").fmt == "shell"
    assert classify("bin/tool", "#!/usr/bin/python3").lang == "python"


def test_include_globs_match_paths_and_names():
    assert matches_any("docs/a/b.md", ("docs/*",))
    assert matches_any("x/README.md", ("**/README.md",))
    assert matches_any("README.md", ("**/README.md",))
    assert not matches_any("src/a.py", ("*.md",))


def test_secrets_are_redacted_and_counted_and_lines_stay_true():
    text = (
        "key = AKIA2E0A8F3B244C9986\n"
        "aws_secret_access_key = Zk3mQ9vR2tX7pL4nB8wY1cF6hJ0sD5gA7kE3uI9o\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\n"
        "token: ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\nend\n"
    )
    redacted = redact(text)
    assert redacted.counts == {"aws-access-key": 1, "aws-secret-key": 1, "private-key": 1,
                               "github-token": 1}  # fmt: skip
    assert (
        "AKIA" not in redacted.text
        and "Zk3mQ" not in redacted.text
        and "MIIEow" not in redacted.text
    )
    assert "aws_secret_access_key = [REDACTED:aws-secret-key]" in redacted.text
    assert redacted.text.count("\n") == text.count("\n")
    assert redacted.text.endswith("end\n")


def test_text_without_secrets_is_untouched():
    text = "Use `sk-...` placeholders; AKIA is a prefix.\n"
    assert redact(text).text == text and redact(text).total == 0


@given(st.lists(st.sampled_from(["a", "node_modules", ".git", ".", "", "x.py", "..", "dist"]),
                min_size=1, max_size=6))  # fmt: skip
def test_the_noise_directory_is_found_however_the_relative_path_is_spelt(segments):
    rel = "/".join(segments).lstrip("/")
    parts = PurePosixPath(rel).parts
    first = next((i for i, part in enumerate(parts[:-1]) if part in NOISE_DIRS), None)
    expected = None if first is None else (
        "/".join(parts[: first + 1]) + "/", NOISE_DIRS[parts[first]])  # fmt: skip
    assert noise_dir(rel) == expected
