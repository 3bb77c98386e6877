"""Fake `tools` package: terminal approval callback and gateway approvals."""
