"""Configuration: traitlets with environment defaults.

Order of precedence for every value (Project Think's layers): per-session props (magics) >
subclass / entry point > traitlets config (``c.ThinkConfig.primary_model = ...`` in
``think_kernel_config.py`` or ``ipython_config.py``) > environment > default.
"""

from __future__ import annotations

import os

from traitlets import Float, Int, List, Unicode, default
from traitlets.config import Configurable

HOW_TO_CONFIGURE = """\
**Think has no model configured.** Set an OpenAI-compatible endpoint, then restart the kernel:

- OpenAI: `export OPENAI_API_KEY=sk-...` (optionally `THINK_MODEL=gpt-4o-mini`)
- A local server (Ollama, vLLM, LiteLLM): `export OPENAI_BASE_URL=http://localhost:11434/v1`
  and `THINK_MODEL=llama3.1` (a key is optional there)

or put `c.ThinkConfig.api_key`, `c.ThinkConfig.base_url` and `c.ThinkConfig.primary_model` in
`~/.jupyter/think_kernel_config.py`. See the README, section Configuration."""


class NotConfigured(Exception):
    """No model endpoint is configured; the message says what to set."""

    def __init__(self) -> None:
        super().__init__(HOW_TO_CONFIGURE)


class ThinkConfig(Configurable):
    """Model endpoint, model roles and loop limits."""

    base_url = Unicode(
        None,
        allow_none=True,
        config=True,
        help="OpenAI-compatible endpoint URL. Default: $OPENAI_BASE_URL, else the OpenAI API.",
    )
    api_key = Unicode(
        None,
        allow_none=True,
        config=True,
        help="API key for the endpoint. Default: $OPENAI_API_KEY. Never shown to sandboxed code.",
    )
    primary_model = Unicode(
        config=True, help="Model for the main loop. Default: $THINK_MODEL, else gpt-4o-mini."
    )
    fast_model = Unicode(
        config=True,
        help="Model for subagents and quick checks. Default: $THINK_FAST_MODEL or primary.",
    )
    summarizer_model = Unicode(
        config=True, help="Model for context compaction. Default: $THINK_SUMMARIZER_MODEL or fast."
    )
    vision_model = Unicode(
        config=True,
        help="Model for images and screenshots. Default: $THINK_VISION_MODEL or primary.",
    )
    max_steps = Int(
        20, config=True, help="Model calls per request before the run stops. Default: 20."
    )
    retry_delays = List(
        Float(),
        default_value=[2.0, 4.0, 8.0],
        config=True,
        help="Seconds to wait before each retry of a transient model error. Default: [2, 4, 8].",
    )
    request_timeout = Float(
        120.0, config=True, help="Seconds before a model request times out. Default: 120."
    )
    instructions = Unicode(
        "",
        config=True,
        help="Extra instructions appended to the core system prompt. Default: none.",
    )
    store_path = Unicode(
        config=True,
        help="SQLite store file; blobs, the standalone edit history (ydocs.db) and "
        "kernel-sessions.json go next to it. Default: $THINK_STORE_PATH (set by the server "
        "extension for the kernels it starts, and sent over the kernel link), else "
        "<jupyter data dir>/think/<folder name>-<hash of the workspace path>/think.db: never "
        "inside the workspace, which sandboxed code can write.",
    )
    display_interval = Float(
        0.05,
        config=True,
        help="Seconds between live output updates in a cell (at most 20 a second). Default: 0.05.",
    )

    @default("base_url")
    def _base_url_default(self) -> str | None:
        return os.environ.get("OPENAI_BASE_URL") or None

    @default("api_key")
    def _api_key_default(self) -> str | None:
        return os.environ.get("OPENAI_API_KEY") or None

    @default("store_path")
    def _store_path_default(self) -> str:
        return os.environ.get("THINK_STORE_PATH", "")

    @default("primary_model")
    def _primary_default(self) -> str:
        return os.environ.get("THINK_MODEL") or "gpt-4o-mini"

    @default("fast_model")
    def _fast_default(self) -> str:
        return os.environ.get("THINK_FAST_MODEL") or self.primary_model

    @default("summarizer_model")
    def _summarizer_default(self) -> str:
        return os.environ.get("THINK_SUMMARIZER_MODEL") or self.fast_model

    @default("vision_model")
    def _vision_default(self) -> str:
        return os.environ.get("THINK_VISION_MODEL") or self.primary_model

    def credentials(self) -> tuple[str, str | None]:
        """Return (api_key, base_url) or raise NotConfigured with the how-to message."""
        if not self.api_key and not self.base_url:
            raise NotConfigured()
        # Local servers (Ollama, vLLM) accept any key; the SDK insists on one.
        return self.api_key or "not-needed", self.base_url

    def model_for(self, role: str) -> str:
        """The model name for a role: primary, fast, summarizer or vision."""
        return str(getattr(self, f"{role}_model"))
