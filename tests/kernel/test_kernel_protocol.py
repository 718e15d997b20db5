"""``jupyter_kernel_test.KernelTests`` for the think kernel (code samples are ``%%python``
cells and ``%think_*`` commands; no model is needed).

``test_clear_output`` is skipped by jupyter_kernel_test itself: nothing in the think kernel
sends ``clear_output`` yet (``%%python`` runs in a plain subprocess until the sandbox issue).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import jupyter_kernel_test
import pytest
from jupyter_client.manager import start_new_kernel

from tests.kernel.conftest import kernel_env, workspace_in

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


class ThinkKernelProtocolTests(jupyter_kernel_test.KernelTests):
    kernel_name = "think"
    language_name = "markdown"
    file_extension = ".md"

    code_hello_world = "%%python\nprint('hello, world')"
    code_stderr = "%%python\nimport sys\nprint('oops', file=sys.stderr)"
    completion_samples = [
        {"text": "%think_sessi", "matches": {"%think_session", "%think_sessions"}},
        {"text": "%%ba", "matches": {"%%bash"}},
    ]
    complete_code_samples = ["make me a plot", "%think_status", "%%python\nx = 1"]
    incomplete_code_samples = ["%%python\nfor i in range(3):", "%%bash\necho a \\"]
    invalid_code_samples = ["%%python\n1)"]
    code_page_something = "%think_help"
    code_generate_error = "%think_no_such_command"
    code_execute_result = [{"code": "%think_session", "mime": "text/plain"}]
    code_display_data = [{"code": "%think_status", "mime": "text/markdown"}]
    code_history_pattern = "%think_session"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "%think_status"

    _tmp: Path

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = Path(tempfile.mkdtemp(prefix="think-kt-"))
        cls.km, cls.kc = start_new_kernel(
            kernel_name=cls.kernel_name,
            cwd=str(workspace_in(cls._tmp)),
            env=kernel_env(cls._tmp, None),
        )

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        shutil.rmtree(cls._tmp, ignore_errors=True)
