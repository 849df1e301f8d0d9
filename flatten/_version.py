"""The package version: a leaf, so `crawl` (its User-Agent) and the CLI read it without
loading the pipeline."""

__version__ = "0.1.0"
