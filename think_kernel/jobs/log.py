"""A job's bounded log: the last part of its output, its line count, and the percentage it
printed last (the progress the sidebar and ``job_status`` show).

    log = JobLog(1_000_000)
    log.feed("stdout", b"epoch 3/10 30%\\n")
    log.lines, log.percent, log.tail(20)
"""

from __future__ import annotations

import codecs
import re

# "42%", "42.5 %", tqdm's " 42%|" ... : the last one a chunk holds is the job's progress.
_PERCENT = re.compile(rb"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?%")


class JobLog:
    """Keeps the last ``limit`` characters of a job's output (stdout and stderr interleaved,
    as a terminal shows them) and counts what it dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.text = ""
        self.dropped = 0  # characters no longer kept
        self.lines = 0  # newlines seen (carriage-return redraws count as lines too)
        self.bytes = 0
        self.percent: float | None = None
        self._dec = {s: codecs.getincrementaldecoder("utf-8")("replace")
                     for s in ("stdout", "stderr")}  # fmt: skip

    def feed(self, stream: str, data: bytes, final: bool = False) -> None:
        """Add what ``stream`` wrote."""
        self.bytes += len(data)
        self.lines += data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
        found = [m for m in _PERCENT.findall(data) if float(m) <= 100]
        if found:
            self.percent = float(found[-1])
        text = self._dec.get(stream, self._dec["stdout"]).decode(data, final)
        self.text += text.replace("\r\n", "\n")
        if len(self.text) > self.limit:
            cut = len(self.text) - self.limit
            # Drop whole lines where one ends close to the cut.
            nl = self.text.find("\n", cut, cut + 200)
            cut = nl + 1 if nl >= 0 else cut
            self.dropped += cut
            self.text = self.text[cut:]

    def tail(self, lines: int) -> str:
        """The last ``lines`` lines kept (a progress bar's redraws: its last state only)."""
        kept = [ln.rsplit("\r", 1)[-1] for ln in self.text.split("\n")]
        if kept and kept[-1] == "":
            kept.pop()
        return "\n".join(kept[-lines:]) if lines > 0 else ""
