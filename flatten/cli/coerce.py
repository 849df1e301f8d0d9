"""Option values coerced without pydantic where the answer is plain, so a command starts fast.

Typer coerces every parameter, defaults included, through a pydantic `TypeAdapter`: importing
pydantic and building the adapters was about a quarter of a one-file `flatten`'s CPU. The
types our commands declare (str, bool, int and float with bounds, Path, an Enum, list[str]) are
coerced here as those adapters coerce them; anything else, and any value not plainly valid (out
of bounds, not a number, not a choice), goes to typer's own coercion, so what is accepted and
every message of a refusal stay typer's. `tests/test_help.py` checks the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer._param_types import coerce_cli_choice, coerce_cli_path
from typer.models import ParameterInfo


class _Declined(Exception):
    """Not a value this module answers for: typer's coercion decides."""


Convert = Callable[[Any, Any], Any]  # (value, click context) -> the coerced value

_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_DECIMAL = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")


@dataclass(frozen=True)
class PlainRuntimeParam(RuntimeParam):
    """Typer's coercion contract, answered by `convert`, else by typer's own coercion."""

    convert: Convert
    descriptor: TypeDescriptor

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return self.convert(value, ctx)
        except Exception:  # _Declined, or a refusal: typer's coercion words it
            fallback = build_runtime_param(self.descriptor)
            return fallback._coerce_value(value, param=param, ctx=ctx)


def plain_runtime_param(descriptor: TypeDescriptor) -> PlainRuntimeParam | None:
    """The coercion of `descriptor` without pydantic, if its type is one this module knows."""
    info = descriptor.parameter_info
    if info.parser is not None or info.clamp or descriptor.file_annotation is not None:
        return None
    annotation = descriptor.annotation
    if get_origin(annotation) is list:
        (element,) = get_args(annotation)
        convert_one = _leaf(element, info)
        if convert_one is None:
            return None
        one: Convert = convert_one  # bound for the closure

        def convert(value: Any, ctx: Any) -> list[Any]:
            items = value if isinstance(value, (list, tuple)) else [value]
            return [one(item, ctx) for item in items]

    else:
        leaf = _leaf(annotation, info)
        if leaf is None:
            return None
        convert = leaf
    return PlainRuntimeParam(info, annotation, convert, descriptor)


def _leaf(annotation: Any, info: ParameterInfo) -> Convert | None:
    if annotation is str:
        return _str
    if annotation is bool:
        return _bool
    if annotation is int:
        return _bounded(_int, info)
    if annotation is float:
        return _bounded(_float, info)
    if annotation is Path and _plain_path(info):
        return lambda value, ctx: coerce_cli_path(
            value if isinstance(value, Path) else Path(_str(value, ctx)), info, path_type=Path,
            ctx=ctx,
        )  # fmt: skip
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        choices = tuple(annotation)
        return lambda value, ctx: coerce_cli_choice(
            value, choices=choices, case_sensitive=info.case_sensitive, ctx=ctx
        )
    return None


def _plain_path(info: ParameterInfo) -> bool:
    """A path option with no checks asked for: typer takes its text as the path."""
    return not (info.exists or info.resolve_path or info.allow_dash or info.path_type)


def _str(value: Any, ctx: Any) -> str:
    if type(value) is not str:
        raise _Declined
    return value


def _bool(value: Any, ctx: Any) -> bool:
    if type(value) is not bool:
        raise _Declined
    return value


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is str and _INTEGER.fullmatch(value):
        return int(value)
    raise _Declined


def _float(value: Any) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    if type(value) is str and _DECIMAL.fullmatch(value):
        return float(value)
    raise _Declined


def _bounded(number: Callable[[Any], Any], info: ParameterInfo) -> Convert:
    low, high = info.min, info.max

    def convert(value: Any, ctx: Any) -> Any:
        got = number(value)
        if (low is not None and got < low) or (high is not None and got > high):
            raise _Declined  # refused: typer says so in its words
        return got

    return convert


def use_plain_coercion(params: list[Any]) -> None:
    """Give each typer parameter the plain coercion of its type, where there is one."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", True) is not None:
            continue
        plain = plain_runtime_param(descriptor)
        if plain is not None:
            param._runtime_param = plain
