"""Terraform: one slice per top-level block, titled with Terraform's addresses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from slicers import SliceOptions, slice_text
from tests.conftest import FIXTURES, indexed_tree
from tests.slicer_invariants import assert_covers

MODULE = FIXTURES / "terraform" / "modules" / "eks"


def sliced(path):
    text = path.read_text()
    result = slice_text("terraform", text, str(path))
    assert_covers(text, result)
    return result


def test_blocks_are_titled_with_their_addresses_and_true_line_ranges():
    result = sliced(MODULE / "main.tf")
    assert [(s.title, s.start_line, s.end_line) for s in result.slices] == [
        ("terraform", 1, 9),
        ("provider.aws", 11, 13),
        ("provider.aws.west", 15, 19),
        ("locals", 21, 24),
        ("data.aws_iam_policy_document.assume", 26, 34),
        ("aws_iam_role.cluster", 36, 42),
        ("aws_eks_cluster.main", 44, 53),
        ("module.vpc", 55, 60),
        ("moved aws_iam_role.eks -> aws_iam_role.cluster", 62, 65),
        ("import aws_eks_cluster.main", 67, 70),
        ("removed aws_security_group.legacy", 72, 77),
    ]
    assert not result.syntax_error
    # moved/import/removed name an address they do not declare.
    assert [s.symbol for s in result.slices][-4:] == ["module.vpc", None, None, None]


def test_a_question_naming_a_resource_finds_its_declaration_before_an_import_of_it(tmp_path):
    from index.search import SearchOptions, search
    from index.store import Store

    store_dir = indexed_tree(tmp_path, {"main.tf": (MODULE / "main.tf").read_text()}, "tf")
    with Store.open(store_dir, readonly=True) as opened:
        hits = search(opened, "aws_eks_cluster", SearchOptions(per_doc=None)).results
    assert (hits[0].title, hits[0].start_line) == ("aws_eks_cluster.main", 44)


def test_leading_comments_belong_to_the_block_below():
    role = next(s for s in sliced(MODULE / "main.tf").slices if s.symbol == "aws_iam_role.cluster")
    assert role.content.startswith("# The control plane role.\n# Rotated by")


def test_variables_and_outputs():
    assert [s.symbol for s in sliced(MODULE / "variables.tf").slices] == [
        "var.cluster_name", "var.region", "output.cluster_arn"
    ]  # fmt: skip


def test_tfvars_attributes_are_grouped():
    result = sliced(FIXTURES / "terraform" / "prod.tfvars")
    assert [s.title for s in result.slices] == ["cluster_name, region, environment"]


def test_a_file_with_syntax_errors_still_slices_and_says_so():
    text = 'resource "a" "b" {\n  x = \n}\nresource "ok" "y" {}\nbroken {{{\n'
    result = slice_text("terraform", text, "bad.tf")
    assert result.syntax_error and result.notes
    assert_covers(text, result)


def test_oversized_block_splits_and_keeps_its_address():
    body = "\n".join(f'  tag_{i} = "{"v" * 40}"' for i in range(200))
    text = f'resource "aws_s3_bucket" "logs" {{\n{body}\n}}\n'
    result = slice_text("terraform", text, "big.tf", SliceOptions(max_chars=1000))
    assert len(result.slices) > 3
    assert {s.symbol for s in result.slices} == {"aws_s3_bucket.logs"}
    assert_covers(text, result)


HCL_PIECES = st.sampled_from([
    'resource "a" "b" {', "}", "  x = 1", "# comment", "", 'module "m" {', "locals {", "{", "{{",
    'variable "v" {}', "y = [1,", "]", '"unterminated', "provider \"aws\" {", "  alias = \"w\"",
])  # fmt: skip


@settings(max_examples=300)
@given(st.lists(HCL_PIECES, max_size=40).map("\n".join) | st.text(max_size=500))
def test_never_raises_and_covers_every_line(text):
    assert_covers(text, slice_text("terraform", text, "p.tf", SliceOptions(300)))
