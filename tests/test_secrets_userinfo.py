"""Credentials in URLs: `strip_credentials` (what is shown and kept) and the `url-password`
redaction read a URL's userinfo by one rule. Property tests over generated URLs: userinfo ends
at the last `@` before the host, a URL without userinfo is never changed (ports, `@` in paths),
and a password with a raw `/`, `?` or `#` is still found."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flatten.secrets import redact
from flatten.userinfo import strip_credentials

LOWER = "abcdefghijklmnopqrstuvwxyz"
UNRESERVED = LOWER + LOWER.upper() + "0123456789-._~"
SUB_DELIMS = "!$&()*+,;="

schemes = st.sampled_from(["http", "https", "git+ssh", "postgres", "redis"])
hosts = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,2}", fullmatch=True)
ports = st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}"))
# Paths, queries and fragments that may hold `@` and `:` (`/@scope/pkg`, `?next=a@b`).
TAIL = r"(/[A-Za-z0-9@:._~-]{0,12}){0,3}(\?[a-z]=[A-Za-z0-9@:]{0,6})?(#[a-z@]{0,4})?"
tails = st.from_regex(TAIL, fullmatch=True)
users = st.text(UNRESERVED + SUB_DELIMS + "%", min_size=1, max_size=12)
# A password may hold raw `@` and `:` (a URL parser reads it up to the last `@`).
passwords = st.text(UNRESERVED + SUB_DELIMS + "%@:", min_size=1, max_size=16)


@given(schemes, users, passwords, hosts, ports, tails)
def test_userinfo_ends_at_the_last_at_sign_before_the_host(scheme, user, password, host, port,
                                                           tail):  # fmt: skip
    url = f"{scheme}://{user}:{password}@{host}{port}{tail}"
    assert strip_credentials(url) == f"{scheme}://{host}{port}{tail}"
    assert strip_credentials(f"see {url} and {url}.") == (
        f"see {scheme}://{host}{port}{tail} and {scheme}://{host}{port}{tail}."
    )


@given(schemes, users, hosts, ports, tails)
def test_a_user_without_a_password_is_stripped_too(scheme, user, host, port, tail):
    assert strip_credentials(f"{scheme}://{user}@{host}{port}{tail}") == (
        f"{scheme}://{host}{port}{tail}"
    )


@given(schemes, hosts, ports, tails)
def test_a_url_without_userinfo_is_never_changed(scheme, host, port, tail):
    url = f"{scheme}://{host}{port}{tail}"  # `http://localhost:3000/@vite/client`
    assert strip_credentials(url) == url
    assert redact(url).text == url


# A password written with a raw `/`, `?` or `#` (a cloud secret key pasted as is): no `@` in it
# then, and not a port's digits before the first of them.
slashed = st.from_regex(r"[A-Za-z][A-Za-z0-9+=_-]{0,8}[/?#][A-Za-z0-9/?#+=_-]{0,12}",
                        fullmatch=True)  # fmt: skip


@given(schemes, users, slashed, hosts, ports, tails)
def test_a_password_with_a_slash_question_mark_or_hash_is_stripped(scheme, user, password, host,
                                                                    port, tail):  # fmt: skip
    url = f"{scheme}://{user}:{password}@{host}{port}{tail}"
    assert strip_credentials(url) == f"{scheme}://{host}{port}{tail}"


# A real-looking password: a capital and a digit, so no placeholder rule keeps it.
real = st.tuples(st.sampled_from("QWXZK"), st.sampled_from("3791"), slashed).map("".join)


@given(schemes, st.from_regex(r"[a-z]{1,8}", fullmatch=True), real, hosts, ports, tails)
def test_a_slashed_url_password_is_redacted_keeping_user_and_host(scheme, user, password, host,
                                                                  port, tail):  # fmt: skip
    url = f"{scheme}://{user}:{password}@{host}{port}{tail}"
    out = redact(f"url = {url}\n").text
    assert out == f"url = {scheme}://{user}:[REDACTED:url-password]@{host}{port}{tail}\n"


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:3000/@vite/client",
        "https://registry.npmjs.org:443/@babel/core",
        "https://www.npmjs.com/package/@scope/name",
        "http://[::1]:8080/@x",
        "https://host:8443/#/login@x",
        "https://host/a:b@c",
    ],
)
def test_ports_and_paths_with_at_signs_are_not_credentials(url):
    assert strip_credentials(url) == url and redact(url).text == url


def test_an_email_address_as_user_name_is_stripped_whole():
    assert strip_credentials("https://me@corp.example:Pw9xk2@host/x") == "https://host/x"
    assert "Pw9xk2" not in redact("https://me@corp.example:Pw9xk2@host/x").text
