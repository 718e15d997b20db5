"""``python -m think_kernel``: the kernel application (an ``IPKernelApp`` serving ThinkKernel).

Its ``name`` makes traitlets read ``think_kernel_config.py``; besides IPython's profile folder
we also look in the Jupyter config path (``~/.jupyter``, ``$JUPYTER_CONFIG_DIR``, ...), where the
README tells users to put it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipykernel.kernelapp import IPKernelApp
from jupyter_core.paths import jupyter_config_path
from traitlets import Type, default
from traitlets.config import Application

from .thinkkernel import ThinkKernel


class ThinkKernelApp(IPKernelApp):
    """Launches the think kernel."""

    name = "think_kernel"
    description = "Think: a coding agent as a Jupyter kernel"
    kernel_class = Type(  # type: ignore[assignment]
        ThinkKernel,
        klass="ipykernel.kernelbase.Kernel",
        config=True,
        help="The kernel class to serve. Default: think_kernel.kernel.thinkkernel.ThinkKernel.",
    )

    @default("config_file_name")
    def _config_file_name_default(self) -> str:
        return "think_kernel_config.py"

    def load_config_file(self, *args: Any, **kwargs: Any) -> None:
        """IPython's profile config, then ``think_kernel_config.py`` from the Jupyter path."""
        super().load_config_file(*args, **kwargs)
        # jupyter_config_path() lists the user dir first; traitlets gives the first path the
        # highest priority, as Jupyter applications do.
        paths = [p for p in jupyter_config_path() if Path(p).is_dir()]
        if paths:
            Application.load_config_file(self, "think_kernel_config.py", path=paths)

    def init_shell(self) -> None:
        """Keep think requests out of IPython's Python history (their own history file)."""
        hm = self.config.HistoryManager
        if "hist_file" not in hm and self.profile_dir is not None:
            hm.hist_file = str(Path(self.profile_dir.location) / "think_history.sqlite")
        super().init_shell()


def main() -> None:
    """Entry point of ``python -m think_kernel``."""
    ThinkKernelApp.launch_instance()
