"""resolve_runtime_provider(): provider/base_url/api_key for AIAgent."""

from hermes_cli.config import load_config

DEFAULT_BASE_URL = "http://127.0.0.1:9/v1"  # port 9 (discard): never contacted


def resolve_runtime_provider(*, requested=None, explicit_api_key=None,
                             explicit_base_url=None, target_model=None) -> dict:
    model_cfg = load_config().get("model")
    if not isinstance(model_cfg, dict):
        model_cfg = {}
    provider = requested or model_cfg.get("provider") or "fake"
    if provider == "broken":
        # Same wording as the real "configured but unusable provider" failure.
        raise RuntimeError("Provider 'broken' is set but no API key")
    return {
        "provider": provider,
        "api_mode": "chat_completions",
        "base_url": explicit_base_url or model_cfg.get("base_url") or DEFAULT_BASE_URL,
        "api_key": explicit_api_key or "fake-key",
        "source": "fake",
        "requested_provider": requested,
    }
