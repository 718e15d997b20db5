"""What the model and sandboxed code may put on the page: inert MIME bundles and Markdown."""

from .bundle import UNTRUSTED_MIME, safe_bundle, safe_text_bundle, scriptable
from .markdown import safe_markdown

__all__ = ["UNTRUSTED_MIME", "safe_bundle", "safe_markdown", "safe_text_bundle", "scriptable"]
