"""Configuration: traitlets with environment defaults.

Order of precedence for every value (Project Think's layers): per-session props (magics) >
subclass / entry point > traitlets config (``c.ThinkConfig.primary_model = ...`` in
``think_kernel_config.py`` or ``ipython_config.py``) > environment > default.
"""

from __future__ import annotations

import os

from traitlets import Bool, Dict, Float, Int, List, TraitError, Unicode, default, validate
from traitlets.config import Configurable

HOW_TO_CONFIGURE = """\
**Think has no model configured.** Either

- open the **Think chat sidebar** in JupyterLab: its setup card saves an endpoint for this
  server, used from the next request on (nothing restarts); or
- set an OpenAI-compatible endpoint in the environment, then restart the kernel:
  `export OPENAI_API_KEY=sk-...` for OpenAI (optionally `THINK_MODEL=gpt-4o-mini`), or
  `export OPENAI_BASE_URL=http://localhost:11434/v1 THINK_MODEL=llama3.1` for a local server
  (Ollama, vLLM, LiteLLM; a key is optional there).

`c.ThinkConfig.api_key`, `base_url` and `primary_model` in `~/.jupyter/think_kernel_config.py`
work too. See the README, section Configuration."""

#: The same for the chat sidebar, where the setup card is one click away.
HOW_TO_CONFIGURE_CHAT = """\
**Think has no model configured.** Click **Set up a model** in this sidebar and choose
OpenAI, Ollama or any OpenAI-compatible endpoint; **Test connection** lists its models.
It is saved on the server for you and used from your next message: nothing restarts."""


#: Error codes of the endpoint that the setup card fixes (agent/model.py classifies them).
ENDPOINT_ERRORS = {"auth", "permission", "model_not_found", "connection"}
CHAT_ADVICE = (
    "Open **Set up a model** in this sidebar (the model name in its header) to change the "
    "endpoint, key or model; it applies from your next message, nothing restarts."
)


def chat_error(code: str, message: str) -> str:
    """An endpoint error as the chat sidebar says it: what happened, then the setup card
    (not the environment and a kernel restart, which a sidebar user has no hand on)."""
    if code not in ENDPOINT_ERRORS:
        return message
    what = message.split(". ", 1)[0].rstrip(".")
    return f"{what}.\n\n{CHAT_ADVICE}"


class NotConfigured(Exception):
    """No model endpoint is configured; the message says what to set."""

    def __init__(self, message: str = HOW_TO_CONFIGURE) -> None:
        super().__init__(message)


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
        help="Model for subagents and quick internal calls (titles, summaries of large tool "
        "outputs). Default: $THINK_FAST_MODEL, else the primary model.",
    )
    summarizer_model = Unicode(
        config=True,
        help="Model for context compaction. Default: $THINK_SUMMARIZER_MODEL, else the fast model.",
    )
    vision_model = Unicode(
        config=True,
        help="Model for requests with images. Default: $THINK_VISION_MODEL, else the primary "
        "model.",
    )
    context_window = Int(
        config=True,
        help="Context window in tokens for every model, overriding the per-model table "
        "(0 = use the table). Default: $THINK_CONTEXT_WINDOW, else 0.",
    )
    context_windows = Dict(
        {},
        config=True,
        help="Context window in tokens per model name (prefix match), added to the built-in "
        "table of common models; unknown models get 32768. Default: {}.",
    )
    compact_at = Float(
        0.8,
        config=True,
        help="Share of the context window a request may fill before older turns are "
        "summarised (0.1-0.95). Default: 0.8.",
    )
    compact_keep = Float(
        0.4,
        config=True,
        help="Share of the room left for history (window x compact_at, minus the system "
        "prompt and tools) that the recent tail keeps verbatim when compacting (0.1-0.8). "
        "Default: 0.4.",
    )
    prices = Dict(
        {},
        config=True,
        help="USD per million tokens per model name (prefix match) as [input, cached input, "
        "output] or [input, output], added to the built-in table of common models; unknown "
        "models show no cost. Default: {}.",
    )
    summarize_outputs = Bool(
        True,
        config=True,
        help="Ask the fast model for a short summary of tool outputs too large for the model "
        "(over 30000 characters); the whole output is stored either way. Default: True.",
    )
    auto_title = Bool(
        True,
        config=True,
        help="Name untitled sessions after their first request with the fast model. Default: True.",
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
    approval_policy = Unicode(
        "default",
        config=True,
        help="Which tool calls wait for a person's approval: 'auto' (never ask), 'default' "
        "(deletions, reverts, run_in_kernel, non-GET fetch, tools neither core nor read-only) "
        "or 'strict' (also every write and execution). Per session: %think_approve. "
        "Default: 'default'.",
    )
    approval_rules = List(
        Dict(),
        default_value=[],
        config=True,
        help="Rules checked before the mode, first match wins, e.g. "
        "{'tool': 'bash', 'arg': 'command', 'regex': 'rm\\s'} (ask when it matches), "
        "{'tool': 'write_file', 'arg': 'path', 'outside': 'src/**'} (ask outside a glob), "
        "{'tool': 'fetch', 'arg': 'method', 'not': 'GET'}, {'tool': 'X', 'action': 'allow'}. "
        "Default: none.",
    )
    approval_timeout = Float(
        600.0,
        config=True,
        help="Seconds an approval waits for a decision before it counts as rejected. "
        "Default: 600 (10 minutes).",
    )
    question_timeout = Float(
        600.0,
        config=True,
        help="Seconds a question of the agent (ask_user) waits for an answer before the "
        "model is told there was no answer. Default: 600 (10 minutes).",
    )
    review_mode = Bool(
        False,
        config=True,
        help="Review mode for sessions that do not choose (a session's %think_review or the "
        "sidebar's toggle does): the agent's file and notebook edits go to a proposal a "
        "person accepts or rejects, not to the live files. Default: False.",
    )
    trust_workspace_tools = Bool(
        False,
        config=True,
        help="Load the agent's own tools from <workspace>/.think/tools without asking a person "
        "to approve each new or changed file (under every approval policy they ask "
        "otherwise). Only for workspaces whose every writer you trust. Default: False.",
    )
    kernel_exec = Unicode(
        "ask",
        config=True,
        help="run_in_kernel (%%think in an IPython kernel runs code in your namespace): 'ask' "
        "for approval under the default policy, or 'auto' to allow it. Default: 'ask'.",
    )
    mcp_servers = Dict(
        {},
        config=True,
        help="MCP servers whose tools the agent may call, as in mcp.json: {NAME: {'command', "
        "'args', 'env', 'cwd'} | {'url', 'headers'}} (or {'mcpServers': {...}}); merged over "
        "mcp.json in the Jupyter config directories, server by server. ${VAR} and "
        "${VAR:-default} expand from the kernel's environment. They run unsandboxed, as you. "
        "Default: {}.",
    )
    mcp_start_timeout = Float(
        30.0,
        config=True,
        help="Seconds an MCP server may take to start and list its tools. Default: 30.",
    )
    mcp_call_timeout = Float(
        300.0,
        config=True,
        help="Seconds an MCP tool call may take (a server's 'timeout' overrides it). Default: 300.",
    )
    display_interval = Float(
        0.05,
        config=True,
        help="Seconds between live output updates in a cell (at most 20 a second). Default: 0.05.",
    )

    @validate("approval_policy")
    def _check_approval_policy(self, proposal: dict) -> str:
        if proposal["value"] not in ("auto", "default", "strict"):
            raise TraitError("approval_policy is 'auto', 'default' or 'strict'")
        return str(proposal["value"])

    @validate("kernel_exec")
    def _check_kernel_exec(self, proposal: dict) -> str:
        if proposal["value"] not in ("ask", "auto"):
            raise TraitError("kernel_exec is 'ask' or 'auto'")
        return str(proposal["value"])

    @validate("approval_timeout")
    def _check_approval_timeout(self, proposal: dict) -> float:
        if proposal["value"] <= 0:
            raise TraitError("approval_timeout is a positive number of seconds")
        return float(proposal["value"])

    @validate("question_timeout")
    def _check_question_timeout(self, proposal: dict) -> float:
        if proposal["value"] <= 0:
            raise TraitError("question_timeout is a positive number of seconds")
        return float(proposal["value"])

    @default("context_window")
    def _context_window_default(self) -> int:
        raw = os.environ.get("THINK_CONTEXT_WINDOW", "").strip()
        try:
            return max(0, int(raw)) if raw else 0
        except ValueError:
            return 0  # a bad value must not stop the kernel; the table applies

    @validate("compact_at")
    def _check_compact_at(self, proposal: dict) -> float:
        return min(0.95, max(0.1, float(proposal["value"])))

    @validate("compact_keep")
    def _check_compact_keep(self, proposal: dict) -> float:
        return min(0.8, max(0.1, float(proposal["value"])))

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

    # The other roles default to "" (follow the role they fall back on), so that a session
    # that changes its primary model also changes the roles that follow it.
    @default("fast_model")
    def _fast_default(self) -> str:
        return os.environ.get("THINK_FAST_MODEL", "")

    @default("summarizer_model")
    def _summarizer_default(self) -> str:
        return os.environ.get("THINK_SUMMARIZER_MODEL", "")

    @default("vision_model")
    def _vision_default(self) -> str:
        return os.environ.get("THINK_VISION_MODEL", "")

    def credentials(self) -> tuple[str, str | None]:
        """Return (api_key, base_url) or raise NotConfigured with the how-to message."""
        if not self.api_key and not self.base_url:
            raise NotConfigured()
        # Local servers (Ollama, vLLM) accept any key; the SDK insists on one.
        return self.api_key or "not-needed", self.base_url

    def model_for(self, role: str) -> str:
        """The configured model of a role (primary, fast, summarizer, vision); "" = follow
        its fallback (summarizer -> fast -> primary, vision -> primary)."""
        return str(getattr(self, f"{role}_model", "") or "")
