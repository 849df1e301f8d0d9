"""A store URL the command line cannot use is a usage error (exit 2) with a named reason, and a
password written into it is never printed, wherever it sits in the URL (a `/`, `?` or `#` in it
hides it from the URL parser). No server is needed: each is refused before any connection."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index.postgres.url import StoreURLError, parse, shown
from index.store import Store
from tests.conftest import assert_clean_failure, run_cli

SECRET = "Pw-9f3k"

# (store URL, reason)
REFUSED = [
    (f"postgresql://docs:{SECRET}@127.0.0.1:9/docs", "store-password-in-url"),
    (f"postgres://docs:{SECRET}/x@127.0.0.1:9/docs", "store-password-in-url"),
    (f"postgresql://docs:{SECRET}#x@127.0.0.1:9/docs", "store-password-in-url"),
    (f"postgresql://docs:{SECRET}?x@127.0.0.1:9/docs", "store-password-in-url"),
    (f"postgresql://docs@127.0.0.1:9/docs?password={SECRET}", "store-password-in-url"),
    (
        f"postgresql://docs@127.0.0.1:9/docs?sslmode=disable&password={SECRET}&x=1",
        "store-password-in-url",
    ),
    (f"postgresql://docs@127.0.0.1:9/docs?sslpassword={SECRET}", "store-password-in-url"),
    (f"postgresql://docs@127.0.0.1:9/docs?pass%77ord={SECRET}", "store-password-in-url"),
    (f"postgresql://docs:{SECRET}@[::1/docs", "bad-store-url"),
    ("postgresql://docs@127.0.0.1:9", "bad-store-url"),
    (f"mysql://docs:{SECRET}@127.0.0.1/docs", "unsupported-store-url"),
    ("sqlite:///tmp/index.db", "unsupported-store-url"),
]


WORDS = {
    "store-password-in-url": "holds a password",
    "bad-store-url": "the store URL",
    "unsupported-store-url": "a store is a folder or a postgresql:// URL",
}


@pytest.mark.parametrize(("url", "reason"), REFUSED)
@pytest.mark.parametrize("command", [["index", "fixtures/docs-tree"], ["search", "install"],
                                     ["stats"], ["doctor"], ["mcp"]])  # fmt: skip
def test_a_store_url_that_cannot_be_used_is_a_usage_error_that_hides_the_password(
    tmp_path, url, reason, command
):
    arguments = [a if not a.startswith("fixtures/") else str(_root() / a) for a in command]
    result = run_cli(*arguments, "--store", url, cwd=tmp_path)
    # `index DIR` flattens before it opens the store: its summary comes first
    assert result.code == 2 and "Traceback" not in result.stderr, result.stderr
    assert "error: the store" in result.stderr and WORDS[reason] in result.stderr
    with pytest.raises(StoreURLError) as caught:  # the same refusal, by its reason
        Store.open(url)
    assert caught.value.reason == reason
    assert SECRET not in result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []  # no folder made of the URL


def test_the_environment_variables_store_url_is_checked_alike(tmp_path):
    url = f"postgresql://docs:{SECRET}@127.0.0.1:9/docs"
    result = run_cli("stats", env={"DOCS_FLATTEN_STORE": url}, cwd=tmp_path)
    assert_clean_failure(result, 2, "holds a password")
    assert SECRET not in result.stdout + result.stderr


PASSWORDS = st.text(st.characters(codec="ascii", exclude_characters="@"), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(password=PASSWORDS, tail=st.sampled_from(["/docs", "/docs?sslmode=disable", ":5432/d"]))
def test_a_password_is_never_shown_and_always_refused(password, tail):
    url = f"postgresql://app:{password}@db.example{tail}"
    with pytest.raises(StoreURLError) as caught:
        parse(url)
    said = f"{caught.value} {caught.value.hint}"
    for piece in (password, shown(url)):
        assert piece == shown(url) or f":{password}@" not in said
    assert shown(url).startswith("postgresql://app@")
    assert f":{password}@" not in shown(url)


def _root():
    from tests.conftest import FIXTURES

    return FIXTURES.parent


@settings(max_examples=200, deadline=None)
@given(password=st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1,
                        max_size=6),
       key=st.sampled_from(["password", "sslpassword", "PASSWORD"]),
       before=st.sampled_from(["", "sslmode=disable&"]))  # fmt: skip
def test_a_password_parameter_is_refused_and_never_shown_however_short(password, key, before):
    url = f"postgresql://app@db.example/docs?{before}{key}={password}"
    with pytest.raises(StoreURLError) as caught:
        parse(url)
    assert caught.value.reason == "store-password-in-url"
    said = f"{caught.value} {caught.value.hint}"
    assert f"{key}={password}" not in said and f"{key}={password}" not in shown(url)
    assert shown(url) == f"postgresql://app@db.example/docs{'?' + before[:-1] if before else ''}"


HINTED = [f"postgresql://app:{SECRET}@127.0.0.1:9/docs",
          f"postgresql://app@127.0.0.1:9/docs?password={SECRET}"]  # fmt: skip


@pytest.mark.parametrize("store", HINTED)
def test_a_hint_that_repeats_the_command_line_drops_the_password(tmp_path, store):
    # `index FILE.jsonl` without --corpus is refused before the store is opened, with a hint
    # that rebuilds the command line: the password is not in it.
    data = tmp_path / "a.jsonl"
    data.write_text("")
    for extra in ([], ["--json"]):
        result = run_cli("index", data, "--store", store, *extra)
        assert result.code == 2 and "--corpus" in result.stderr, result.stderr
        assert SECRET not in result.stdout + result.stderr
        assert "postgresql://app@127.0.0.1:9/docs" in result.stderr
