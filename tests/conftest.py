"""Fixtures shared by every test package: the scripted model server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_model import FakeModel


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    """A scripted OpenAI-compatible server on a free loopback port."""
    fm = FakeModel().start()
    try:
        yield fm
    finally:
        fm.stop()
