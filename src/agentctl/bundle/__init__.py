"""Bundling a project into an immutable revision."""
