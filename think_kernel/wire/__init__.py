"""The wire, declared once: frames of the kernel link, of the session socket, and agent events.

- :mod:`.base`: the ``Frame`` dataclass base, :func:`~.base.decode` (a received object to a
  typed frame, or a ``FrameError``) and the field checks taken from the type hints.
- :mod:`.link`: frames between a think kernel and the server (``/api/think/link``).
- :mod:`.session`: frames between the server and a browser tab (``/api/think/sessions/{id}/ws``)
  besides the agent events of :mod:`think_kernel.agent.events`.
- :mod:`.schema`: JSON Schema (OpenAPI 3.0 flavour) of every frame, for the OpenAPI document
  and the reference pages.
- :mod:`.gen_ts`: ``python -m think_kernel.wire.gen_ts > labextension/src/wire.ts``.
"""
