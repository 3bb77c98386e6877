"""Fake `hermes_cli` package: config, runtime provider and toolset helpers."""
