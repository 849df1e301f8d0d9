"""Running git: a clean environment, no prompts, timeouts, and errors scrubbed of credentials."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flatten.errors import SourceError
from flatten.userinfo import strip_credentials

DEFAULT_TIMEOUT = 900.0


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: str


def git_available() -> bool:
    return git_path() is not None


def git_path(env: Mapping[str, str] | None = None) -> str | None:
    """The git that `env`'s PATH (else this process's) names, as exec would find it. Started by
    this path, a git process costs one exec, not one failed exec per PATH entry before git's."""
    return shutil.which("git", path=os.pathsep.join(os.get_exec_path(env)))


def git_env(token: str | None = None) -> dict[str, str]:
    """The environment for git: never prompt; a token goes in an HTTP header, never in a URL; no
    optional locks (`git status` would otherwise refresh the checkout's index under
    .git/index.lock, and a `git commit` of the user's or a CI step's landing then would fail)."""
    env = dict(os.environ)
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GCM_INTERACTIVE="never",
        LC_ALL="C",
        LANGUAGE="C",
        GIT_OPTIONAL_LOCKS="0",
    )
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        n = int(env.get("GIT_CONFIG_COUNT", "0") or 0)  # keep the user's own GIT_CONFIG_* entries
        env[f"GIT_CONFIG_KEY_{n}"] = "http.extraHeader"
        env[f"GIT_CONFIG_VALUE_{n}"] = f"Authorization: Basic {basic}"
        env["GIT_CONFIG_COUNT"] = str(n + 1)
    return env


def run_git(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    secrets: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
) -> GitResult:
    """Run git; stderr comes back with credentials and the given secrets masked."""
    return run_git_all([args], env=env, secrets=secrets, timeout=timeout)[0]


def run_git_all(
    commands: Sequence[Sequence[str]],
    *,
    env: Mapping[str, str] | None = None,
    secrets: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
) -> list[GitResult]:
    """`run_git` for each of `commands`, all started at once: a listing asks git several small
    questions, and their start-ups one after another were serial time before any file is read.
    `timeout` bounds the whole batch."""
    env = dict(env) if env is not None else git_env()
    executable = git_path(env)
    started: list[tuple[Sequence[str], subprocess.Popen[bytes]]] = []
    try:
        if executable is None:
            raise FileNotFoundError("git")
        for args in commands:
            started.append((args, subprocess.Popen(["git", *args], executable=executable,
                                                   env=env, stdin=subprocess.DEVNULL,
                                                   stdout=subprocess.PIPE,
                                                   stderr=subprocess.PIPE)))  # fmt: skip
        deadline = time.monotonic() + timeout
        done = []
        for args, proc in started:
            try:
                out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                raise SourceError(
                    f"git {args[0]} did not finish within {timeout:.0f} s", reason="git-timeout"
                ) from exc
            done.append(GitResult(proc.returncode, out, scrub(err.decode("utf-8", "replace"),
                                                              secrets)))  # fmt: skip
        return done
    except FileNotFoundError as exc:
        raise SourceError(
            "git is not installed", reason="git-missing", hint="install git and retry"
        ) from exc
    finally:
        for _, proc in started:
            if proc.returncode is None:  # a timeout or an error: none is left running
                proc.kill()
                proc.communicate()


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    text = strip_credentials(text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text.strip()
