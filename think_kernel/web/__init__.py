"""Web research and a real browser, with no way home.

Pure cores: :mod:`.netpolicy` (which addresses may be reached), :mod:`.cache` (TTL + LRU),
the request/response halves of :mod:`.search`. Thin adapters: :mod:`.egress` and
:mod:`.proxy` (every connection resolved once, checked, then made to that address),
:mod:`.browser` (Playwright on the system Chromium), :mod:`.page` (what is done to a page),
:mod:`.vision` (asking the vision model role about a screenshot). :mod:`.services` holds one of
each per kernel; :mod:`.tools` are the functions the model calls.
"""

from .config import WebConfig
from .services import WebServices
from .tools import WEB_TOOLS
from .vision import ModelVision

__all__ = ["WEB_TOOLS", "ModelVision", "WebConfig", "WebServices"]
