"""Per-platform toolset selection."""


def _get_platform_tools(config, platform, *, include_default_mcp_servers=True) -> set:
    per_platform = (config or {}).get("platform_toolsets") if isinstance(config, dict) else None
    if isinstance(per_platform, dict) and platform in per_platform:
        return set(per_platform[platform] or [])
    return {"hermes-" + str(platform)}
