"""Fake `agent` package: only prompt_builder is provided."""
