"""ruamel.yaml's loader, with its warnings about the text it reads silenced.

A document ruamel reads but frowns at (an anchor defined twice, which YAML allows: the later one
wins; a YAML 1.1 float) makes it warn on stderr, pointing into its own source, once per file and
even under --quiet. What it reads is the user's file, not our code: the slicer keeps every line
either way, so the warning says nothing the user can act on. The filter is installed once, by
category (process-wide and thread-safe, unlike `warnings.catch_warnings`).
"""

from __future__ import annotations

import warnings

from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import YAMLFutureWarning, YAMLWarning
from ruamel.yaml.resolver import implicit_resolvers

warnings.filterwarnings("ignore", category=YAMLWarning)
warnings.filterwarnings("ignore", category=YAMLFutureWarning)

__all__ = ["YAML", "RoundTripConstructor", "implicit_resolvers"]
