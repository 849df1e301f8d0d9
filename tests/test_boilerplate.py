"""Boilerplate (licences, CODEOWNERS, issue and PR templates, `*.tpl.md`) is skipped with the
reason `boilerplate`, under every --kind; an --include that matches brings it back."""

from __future__ import annotations

import json

import pytest

from flatten.classify import is_boilerplate
from tests.conftest import run_cli, write

BOILERPLATE = {
    "LICENSE": "MIT License\n\nPermission is hereby granted, free of charge...\n",
    "LICENSE-APACHE": "Apache License\nVersion 2.0\n",
    "COPYING.md": "GNU GENERAL PUBLIC LICENSE\n",
    "NOTICE": "This product includes software developed at...\n",
    "CODEOWNERS": "* @owner\n",
    ".github/CODEOWNERS": "/docs/ @docs-team\n",
    ".github/ISSUE_TEMPLATE/bug_report.md": "---\nname: Bug report\n---\n\n**Describe the bug**\n",
    ".github/ISSUE_TEMPLATE/config.yml": "blank_issues_enabled: false\n",
    ".github/PULL_REQUEST_TEMPLATE.md": "## Summary\n\n- [ ] tests added\n",
    "CHANGELOG.tpl.md": "# {{ version }}\n\n{{ changes }}\n",
    "CODE_OF_CONDUCT.md": "# Contributor Covenant Code of Conduct\n\n## Our Pledge\n",
}
REAL_DOCS = {
    "README.md": "# Project\n\nWhat it does.\n",
    "SECURITY.md": "# Security\n\nReport vulnerabilities to security@example.invalid.\n",
    "CONTRIBUTING.md": "# Contributing\n\nRun the tests.\n",
    "docs/licensing.md": "# Licensing your plugin\n\nPick a licence for your plugin.\n",
    "docs/templates.md": "# Page templates\n\nHow templates work.\n",
}


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "project"
    write(root, {**BOILERPLATE, **REAL_DOCS, "src/license.py": "def check():\n    return 1\n"})
    return root


def _report(tmp_path, *args):
    report = tmp_path / "report.json"
    result = run_cli("flatten", *args, "-q", "--report", report)
    assert result.code == 0, result.stderr
    data = json.loads(report.read_text())
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    return {r["source"] for r in result.records()}, skipped


def test_kind_docs_skips_boilerplate_with_its_reason_and_keeps_real_docs(tree, tmp_path):
    kept, skipped = _report(tmp_path, "--root", tree, "--kind", "docs")
    assert kept == set(REAL_DOCS)
    assert {path for path, reason in skipped.items() if reason == "boilerplate"} == set(BOILERPLATE)


def test_kind_code_skips_boilerplate_but_not_code_named_like_it(tree, tmp_path):
    kept, skipped = _report(tmp_path, "--root", tree, "--kind", "code")
    assert "src/license.py" in kept
    assert not kept & set(BOILERPLATE)
    assert skipped["LICENSE"] == "boilerplate"


def test_a_matching_include_brings_boilerplate_back(tree, tmp_path):
    kept, skipped = _report(tmp_path, "--root", tree, "--include", "LICENSE*",
                            "--include", "README.md")  # fmt: skip
    assert kept == {"LICENSE", "README.md"}
    assert skipped["NOTICE"] == "not-included"
    assert skipped["LICENSE-APACHE"] == "not-docs"  # back from boilerplate, still not --kind docs


def test_the_summary_names_the_boilerplate_reason(tree):
    result = run_cli("flatten", "--root", tree)
    assert result.code == 0, result.stderr
    assert f"boilerplate {len(BOILERPLATE)}" in result.stderr


@pytest.mark.parametrize(
    "path",
    ["LICENCE.txt", "docs/LICENSE.rst", "COPYING.LESSER", "docs/pull_request_template.md",
     ".github/PULL_REQUEST_TEMPLATE/feature.md", ".gitlab/issue_templates/Bug.md",
     ".gitlab/merge_request_templates/Default.md", "changelog/release.tmpl.md"],
)  # fmt: skip
def test_boilerplate_paths(path):
    assert is_boilerplate(path)


@pytest.mark.parametrize(
    "path",
    ["SECURITY.md", "CONTRIBUTING.md", "docs/licensing.md", "src/license.go", "licenses.py",
     "docs/templates/index.md", "docs/notices-and-warnings.md", "README.md", "CHANGELOG.md"],
)  # fmt: skip
def test_real_docs_and_code_are_not_boilerplate(path):
    assert not is_boilerplate(path)
