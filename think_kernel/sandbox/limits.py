"""Every limit a session's sandbox runs under, with the mechanism that enforces it, as rows for
``%think_status`` and ``jupyter think doctor`` (pure: no I/O)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .config import SandboxConfig
from .tiers import Tier

if TYPE_CHECKING:
    from .cgroups import SessionCgroup


class LimitRow(NamedTuple):
    """One line of the limits table."""

    name: str
    value: str
    mechanism: str


def _mib(n: int) -> str:
    return f"{n} MiB" if n > 0 else "no limit"


def describe_limits(
    config: SandboxConfig,
    tier: Tier,
    identity: tuple[int, int] | None,
    own_uid: bool,
    cgroup: SessionCgroup | None,
    cgroup_notes: list[str],
    started: bool = True,
) -> list[LimitRow]:
    """The limits in force for a sandbox with this configuration, tier and resources
    (``started=False``: configured values, before the sandbox has taken its cgroup)."""
    mech = dict(cgroup.mechanisms) if cgroup is not None else {}
    missing = "; ".join(cgroup_notes) or ("cgroups off (SandboxConfig.cgroups)"
                                          if not config.cgroups else "no cgroup")  # fmt: skip
    if not started:
        mech = dict.fromkeys(("memory", "pids", "cpu"), "cgroup where possible (sandbox not "
                             "started yet)")  # fmt: skip
    seccomp = tier in (Tier.BUBBLEWRAP, Tier.LANDLOCK)
    rows = [LimitRow("isolation", f"tier {int(tier)}", tier.description)]
    if identity is None:
        rows.append(LimitRow("session identity", "the kernel's uid",
                             "kernel not root: sessions share a uid"))  # fmt: skip
    elif own_uid:
        rows.append(
            LimitRow(
                "session identity",
                f"uid {identity[0]}, group {identity[1]}",
                "a uid of its own from uid_range_start (lock file per uid)",
            )
        )
    else:
        rows.append(LimitRow("session identity", f"uid {identity[0]} (shared)",
                             "session_uids off: every session shares sandbox_uid"))  # fmt: skip
    guards = []
    if identity is not None:
        guards.append("launcher runs as root, children as the session uid")
    if seccomp:
        guards.append("seccomp refuses signals, pidfds and priority changes aimed at it")
    rows.append(LimitRow("launcher protection", "cannot be signalled or traced" if guards else
                         "none", "; ".join(guards) or "tier 3 without root: none"))  # fmt: skip
    rows.append(
        LimitRow(
            "launcher watchdog",
            f"{config.launcher_timeout:g} s",
            "acknowledgement deadline and ping; a wedged launcher is replaced",
        )
    )
    rows.append(LimitRow("memory per session", _mib(config.session_memory_mb),
                         mech.get("memory", f"not enforced: {missing}")
                         if config.session_memory_mb else "-"))  # fmt: skip
    rows.append(LimitRow("memory per process", _mib(config.memory_mb), "RLIMIT_AS"))
    procs = [mech["pids"]] if "pids" in mech else []
    procs.append("RLIMIT_NPROC of its own uid" if own_uid else
                 "RLIMIT_NPROC (per uid, shared by the sessions of that uid)")  # fmt: skip
    rows.append(LimitRow("processes per session", str(config.max_processes), "; ".join(procs)))
    rows.append(LimitRow("CPU share", f"weight {config.cpu_weight}" if config.cpu_weight
                         else "not set", mech.get("cpu", f"not enforced: {missing}")
                         if config.cpu_weight else "-"))  # fmt: skip
    rows.append(LimitRow("CPU time per run", f"{config.cpu_seconds} s" if config.cpu_seconds
                         else "no limit", "RLIMIT_CPU"))  # fmt: skip
    if tier == Tier.BUBBLEWRAP:
        rows.append(
            LimitRow(
                "scratch space",
                _mib(config.scratch_mb),
                "size-limited tmpfs" if config.scratch_mb else "host directory",
            )
        )
    else:
        rows.append(LimitRow("scratch space", "host directory",
                             "its writes count in the disk budget per run"))  # fmt: skip
    rows.append(
        LimitRow(
            "disk writes per run",
            _mib(config.max_write_mb),
            f"/proc/PID/io write_bytes of the session, checked every "
            f"{config.write_check_interval:g} s"
            if config.max_write_mb
            else "-",
        )
    )
    rows.append(
        LimitRow(
            "disk writes per session",
            _mib(config.session_write_mb),
            "the runs' writes added up (as per run) from the sandbox's start; when spent, "
            "runs are refused"
            if config.session_write_mb
            else "-",
        )
    )
    rows.append(
        LimitRow(
            "free-space floor",
            _mib(config.min_free_mb),
            "statvfs of the workspace's filesystem: below it runs are refused or stopped"
            if config.min_free_mb
            else "-",
        )
    )
    rows.append(LimitRow("file size", _mib(config.file_size_mb), "RLIMIT_FSIZE"))
    rows.append(LimitRow("wall clock per run", f"{config.timeout:g} s (max "
                         f"{config.max_timeout:g} s)", "killed by the launcher; a call's "
                         "timeout argument asks for more, up to the max; change both with "
                         "c.SandboxConfig.timeout and max_timeout; longer work: run_job "
                         "(c.JobsConfig)"))  # fmt: skip
    rows.append(LimitRow("output per run", f"{config.max_output_bytes} bytes",
                         "the rest is dropped with a note"))  # fmt: skip
    return rows


def with_disk_use(rows: list[LimitRow], used: str, floor: str) -> list[LimitRow]:
    """The rows with the session's disk use and the free space now in place of the
    configured values (``DiskLedger.describe``)."""
    live = {"disk writes per session": used, "free-space floor": floor}
    return [r._replace(value=live[r.name]) if r.name in live else r for r in rows]


def markdown_table(rows: list[LimitRow]) -> str:
    """The rows as a Markdown table."""
    lines = ["| limit | value | enforced by |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.name} | {r.value} | {r.mechanism.replace('|', '/')} |")
    return "\n".join(lines)
