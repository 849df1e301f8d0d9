"""YAML: documents, Kubernetes titles from the document's own metadata, Helm, big manifests."""

from __future__ import annotations

import shutil
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from slicers import SliceOptions, slice_text
from tests.conftest import FIXTURES, run_cli
from tests.slicer_invariants import assert_covers

GITOPS = FIXTURES / "gitops"


def yaml(path: str, max_chars: int = 4000):
    text = (GITOPS / path).read_text()
    result = slice_text("yaml", text, path, SliceOptions(max_chars))
    assert_covers(text, result)
    return result


def test_title_comes_from_metadata_name_not_the_first_name_anywhere():
    only = yaml("apps/checkout/base/rollout.yaml").slices
    assert [s.title for s in only] == ["Rollout/checkout-api"]
    assert dict(only[0].meta) == {"apiVersion": "argoproj.io/v1alpha1", "namespace": "shop"}
    assert only[0].content.startswith("# The checkout API")


def test_multi_document_stream_splits_on_markers_and_uses_generate_name():
    result = yaml("platform/stream.yaml")
    assert [(s.title, s.start_line, s.end_line) for s in result.slices] == [
        ("Namespace/shop", 1, 6),
        ("ConfigMap/checkout-config", 7, 16),
        ("Job/db-migrate-", 17, 30),
    ]


def test_list_kind_is_sliced_per_item():
    assert [s.title for s in yaml("platform/list.yaml").slices] == [
        "ServiceAccount/checkout-api", "Role/checkout-reader"
    ]  # fmt: skip


def test_helm_templates_slice_like_manifests_with_their_actions_in_titles():
    titles = [s.title for s in yaml("charts/checkout/templates/deployment.yaml").slices]
    assert titles == [
        'Deployment/{{ include "checkout.fullname" . }}',
        'Service/{{ include "checkout.fullname" . }}',
    ]


def test_workflow_compose_kustomization_and_config_titles():
    assert yaml(".github/workflows/deploy.yml").slices[0].title == "workflow: Deploy checkout"
    assert yaml("docker-compose.yml").slices[0].title == "compose: checkout, db"
    kustomize = yaml("apps/checkout/overlays/prod/kustomization.yaml").slices[0]
    assert kustomize.title == "Kustomization (apps/checkout/overlays/prod)"
    assert yaml("charts/checkout/values.yaml").slices[0].title == (
        "values.yaml: replicaCount, image, service"
    )


def generated_manifest(lines: int) -> str:
    """A ConfigMap with `lines` lines of data, as big generated manifests are."""
    head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\n  namespace: gen\ndata:\n"
    body = "".join(f"  key_{i}: value-{i}\n" for i in range(lines - 6))
    return head + body


def test_forty_thousand_line_manifest_splits_and_keeps_its_title():
    text = generated_manifest(40_000)
    started = time.perf_counter()
    result = slice_text("yaml", text, "huge.yaml")
    elapsed = time.perf_counter() - started
    assert len(result.slices) > 100
    assert all(s.title.startswith("ConfigMap/huge (part ") for s in result.slices)
    assert all(dict(s.meta)["namespace"] == "gen" for s in result.slices)
    assert_covers(text, result)
    assert elapsed < 60  # a sanity bound against a hang, not a benchmark


YAML_PIECES = st.sampled_from([
    "---", "...", "apiVersion: v1", "kind: Pod", "kind: List", "items:", "  - kind: A",
    "metadata:", "  name: x", "  generateName: g-", "name: top", "{{- if .x }}", "{{ end }}",
    "  key: {{ .Values.v }}", "# c", "", "- a", "  -", "'quoted: key': v", "on:", "jobs:",
    "services:", "  web:", "\tbad tab", "key: |", "  literal", ": weird",
])  # fmt: skip


@settings(max_examples=300)
@given(st.lists(YAML_PIECES, max_size=50).map("\n".join) | st.text(max_size=600))
def test_never_raises_and_covers_every_line(text):
    assert_covers(text, slice_text("yaml", text, "f.yaml", SliceOptions(300)))


def test_forty_thousand_line_manifest_through_the_cli(tmp_path):
    tree = tmp_path / "gitops"
    shutil.copytree(GITOPS, tree)
    (tree / "generated").mkdir()
    (tree / "generated" / "huge.yaml").write_text(generated_manifest(40_000))
    report = tmp_path / "r.json"
    capped = run_cli("flatten", "--root", tree, "--kind", "auto", "-q", "--max-file-size", "512k",
                     "--report", report)  # fmt: skip
    assert capped.code == 0
    assert "generated/huge.yaml" not in {r["source"] for r in capped.records()}
    assert '"too-large"' in report.read_text()  # skipped, and said so
    raised = run_cli("flatten", "--root", tree, "--kind", "auto", "-q")  # 0.98 MB < 1 MiB
    huge = [r for r in raised.records() if r["source"] == "generated/huge.yaml"]
    assert len(huge) > 100 and huge[-1]["endLine"] == 40_000
    assert huge[0]["title"].startswith("ConfigMap/huge (part 1/")
