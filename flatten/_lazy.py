"""A package face that imports each public name's module on first use (PEP 562), so importing a
package costs nothing until a name is used: `flatten` and `index` share this."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_getattr(
    package: str, exports: dict[str, str], names: dict[str, Any]
) -> Callable[..., Any]:
    """The module `__getattr__` for `exports` (public name -> module); caches into `names`."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        names[name] = value
        return value

    return __getattr__
