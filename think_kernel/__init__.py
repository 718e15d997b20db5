"""Think for Jupyter: the agent kernel, the agent loop and the ``%think`` magics.

In any IPython kernel: ``%load_ext think_kernel`` registers ``%think`` / ``%%think``. The import
stays light (the magics import the runtime on first use) so loading takes milliseconds.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.4.0"


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext think_kernel``: register the ``%think`` magics."""
    from .heap import old_objects_frozen

    with old_objects_frozen():  # a kernel's heap may be large: see think_kernel.heap
        from .kernel.magics import ThinkMagics

    ipython.register_magics(ThinkMagics(ipython))


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext think_kernel``: stop the background loop of the magics."""
    from .kernel.magics import ThinkMagics

    magics = ipython.magics_manager.registry.get(ThinkMagics.__name__)
    if magics is not None:
        magics.close()
