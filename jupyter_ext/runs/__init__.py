"""Chat runs on the server: one think kernel per session (:mod:`.chatkernels`), the
per-session run queue with its attempts and retries (:mod:`.sessions`, :mod:`.run`), an
attempt's way to its kernel (:mod:`.delivery`), what the store and the tabs keep of a run
(:mod:`.records`), which kernel owns an attempt (:mod:`.owners`), heartbeats and recovery
(:mod:`.recovery`), and the first spare kernel started while the server loads
(:mod:`.earlykernel`)."""

from .chatkernels import ChatKernels
from .recovery import Recovery
from .run import ChatRun, RetryPolicy, SessionNotFound
from .sessions import ChatSessions

__all__ = ["ChatKernels", "ChatRun", "ChatSessions", "Recovery", "RetryPolicy", "SessionNotFound"]
