"""Background jobs: sandboxed commands that outlive the model step and the turn, with their
own limits and a bounded log (``run_job``, ``job_status``, ``job_output``, ``stop_job``)."""

from .config import JobsConfig
from .job import STATES, Job
from .registry import JOB_END, JobError, Jobs, link_items, setting_key
from .tools import JOB_TOOLS

__all__ = [
    "JOB_END",
    "JOB_TOOLS",
    "STATES",
    "Job",
    "JobError",
    "Jobs",
    "JobsConfig",
    "link_items",
    "setting_key",
]
