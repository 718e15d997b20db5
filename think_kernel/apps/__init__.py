"""Live apps: long-running web apps in the session's sandbox, served on a private socket
and reachable only through the Jupyter server's authenticated proxy (``serve_app``,
``app_logs``, ``stop_app``)."""

from .app import STATES, App, AppError, app_url
from .config import AppsConfig
from .registry import APP_CRASH, Apps, link_items, setting_key
from .tools import APP_TOOLS

__all__ = [
    "APP_CRASH",
    "APP_TOOLS",
    "STATES",
    "App",
    "AppError",
    "Apps",
    "AppsConfig",
    "app_url",
    "link_items",
    "setting_key",
]
