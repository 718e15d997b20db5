"""The sandbox's own error (a module of its own: every part of the sandbox raises it)."""


class SandboxError(RuntimeError):
    """The sandbox cannot run code (tier below ``required_tier``, zygote failed, closed)."""
