"""``%think_approve`` and the policy row of ``%think_status``."""

from __future__ import annotations

import pytest

from think_kernel.kernel.commands import CommandError, run_command
from think_kernel.runtime import Runtime


# %think_status probes this machine's sandbox tiers (bwrap, a confined child): processes.
@pytest.mark.slow
async def test_think_approve_changes_the_session_policy(runtime: Runtime) -> None:
    status = (await run_command(runtime, "think_status", "")).markdown
    assert "**approvals**: mode `default`" in status
    reply = await run_command(runtime, "think_approve", "strict")
    assert "mode `strict`" in reply.markdown
    reply = await run_command(runtime, "think_approve", r"ask bash command~rm\s")
    assert r"`ask bash when command matches /rm\s/`" in reply.markdown
    await run_command(runtime, "think_approve", "allow run_in_kernel")
    policy = await runtime.policy()
    assert policy.mode == "strict"
    assert policy.check("run_in_kernel", {"code": "1"}) is None
    assert policy.check("bash", {"command": "rm -r x"}, known={"bash"})
    assert "mode `strict`" in (await run_command(runtime, "think_status", "")).markdown
    with pytest.raises(CommandError, match="Usage"):
        await run_command(runtime, "think_approve", "ask bash command~(")
    await run_command(runtime, "think_approve", "reset")
    assert (await runtime.policy()).mode == "default"
    # kernel_exec=auto (the %think_config key) lets run_in_kernel run without asking.
    await run_command(runtime, "think_config", "kernel_exec=auto")
    assert (await runtime.policy()).check("run_in_kernel", {"code": "1"}) is None
    with pytest.raises(CommandError):
        await run_command(runtime, "think_config", "approval_policy=lax")
