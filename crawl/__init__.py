"""Bounded same-host crawling of HTML documentation sites, and HTML to markdown."""
