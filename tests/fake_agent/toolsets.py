"""Toolset resolution: every toolset resolves to the terminal tool."""


def resolve_toolset(name, visited=None, *, include_registry=True) -> list:
    return ["terminal"]
