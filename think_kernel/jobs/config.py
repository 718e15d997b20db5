"""Background job settings (traitlets), e.g. ``c.JobsConfig.timeout = 7200``."""

from __future__ import annotations

from traitlets import Float, Int
from traitlets.config import Configurable


class JobsConfig(Configurable):
    """The limits of a session's background jobs (``run_job``), larger than a foreground run's."""

    timeout = Float(
        4 * 3600.0,
        min=0.0,
        config=True,
        help="Wall-clock limit of one background job, in seconds; past it the job is killed "
        "and ends as 'timeout'. 0 = none (it still ends with its session). Default: 14400 (4 h).",
    )
    cpu_seconds = Int(
        0,
        min=0,
        config=True,
        help="CPU time limit of each process of a job (RLIMIT_CPU), in seconds; 0 = none (the "
        "wall clock bounds a job). Default: 0.",
    )
    memory_mb = Int(
        3072,
        min=0,
        config=True,
        help="Resident memory of all of a job's processes together, in MiB, checked every "
        "check_interval; past it the job is killed and ends as 'memory'. The session's own "
        "limit (SandboxConfig.session_memory_mb) still holds over everything it runs. "
        "0 = only the session's limit. Default: 3072.",
    )
    max_write_mb = Int(
        0,
        min=0,
        config=True,
        help="Bytes one job may write to disk, in MiB, counted as SandboxConfig.max_write_mb "
        "is (the session's writes while the job runs); past it the job ends as 'disk'. "
        "0 = no budget of its own: the session's write budget (session_write_mb) and the "
        "free-space floor (min_free_mb) hold for jobs as for every run. Default: 0.",
    )
    check_interval = Float(
        0.25,
        min=0.01,
        config=True,
        help="How often a running job's memory is measured, in seconds. Default: 0.25.",
    )
    log_bytes = Int(
        1_000_000,
        min=1000,
        config=True,
        help="Output (stdout and stderr together) a job's log keeps, in bytes: its last part; "
        "older output is dropped and counted. Default: 1000000.",
    )
    max_running = Int(
        4,
        min=1,
        config=True,
        help="Background jobs one session may run at once; more are refused. Default: 4.",
    )
    max_kept = Int(
        20,
        min=1,
        config=True,
        help="Ended jobs a session keeps listed (the oldest are forgotten). Default: 20.",
    )
