"""Live app settings (traitlets), e.g. ``c.AppsConfig.max_apps = 2``."""

from __future__ import annotations

from traitlets import Float, Int, Unicode
from traitlets.config import Configurable


class AppsConfig(Configurable):
    """How many live apps (``serve_app``) a session may run, and how they start."""

    max_apps = Int(
        3,
        min=1,
        config=True,
        help="Live apps one session may run at once; more are refused. Default: 3.",
    )
    start_timeout = Float(
        30.0,
        min=0.5,
        config=True,
        help="How long serve_app waits for a new app to answer HTTP, in seconds; an app "
        "that does not answer by then is stopped and its log returned. Default: 30.",
    )
    log_bytes = Int(
        200_000,
        min=1000,
        config=True,
        help="Output (stdout and stderr together) an app's log keeps, in bytes: its last "
        "part; older output is dropped and counted. Default: 200000.",
    )
    memory_mb = Int(
        1024,
        min=0,
        config=True,
        help="Resident memory of all of an app's processes together, in MiB; past it the "
        "app is killed (crashed). The session's own limit still holds. 0 = only the "
        "session's limit. Default: 1024.",
    )
    socket_root = Unicode(
        "",
        config=True,
        help="Folder where each app's private socket folder (mode 0700, the kernel's user "
        "only) is made; a unix socket path must stay under 108 bytes. Default: the system "
        "temporary folder.",
    )
    restart_poll = Float(
        1.0,
        min=0.05,
        config=True,
        help="How often the files of an app started with restart_on_change are checked for "
        "changes, in seconds. Default: 1.",
    )
