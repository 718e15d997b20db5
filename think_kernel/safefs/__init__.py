"""File access inside a workspace that never follows a link someone planted there.

    fs = SafeRoot("/home/me/project")
    fs.write_bytes("src/a.py", b"print(1)\\n")     # atomic; refuses links on the way
    with fs.open_read("src/a.py") as f:            # regular files only
        head = f.read(100)
    fs.unlink("src/a.py")

Sandboxed code can write the workspace, and the kernel and the server (often root) write
there too. If they followed a symbolic link that sandboxed code planted (a temp name, a backup
name, a parent folder) they would write outside the workspace with their privileges (
a ``.pth`` file in the venv ran as uid 0). So every path is opened relative to a held
directory fd: one ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` where the kernel has it,
else one ``openat(O_NOFOLLOW | O_DIRECTORY)`` per component. A write goes to a temp file with a
random name created with ``O_EXCL`` inside the held directory, then ``renameat`` over the
target: nothing sandboxed code could have prepared is ever opened for writing.

Reads follow links that stay inside the root (``RESOLVE_BENEATH``, or ``realpath`` then a
no-follow walk) and refuse anything that is not a regular file (a FIFO would block forever).
``private`` folders inside the root (the store, Jupyter's runtime files) are refused for every
operation. Errors are :class:`UnsafePathError` (an ``OSError``) with a message a person or the
model can act on.
"""

from .openat2 import HAVE_OPENAT2
from .paths import MAX_DEPTH, MAX_PATH, UnsafePathError, split
from .reads import SafeReader
from .root import SafeRoot, is_temp_name

__all__ = [
    "HAVE_OPENAT2",
    "MAX_DEPTH",
    "MAX_PATH",
    "SafeReader",
    "SafeRoot",
    "UnsafePathError",
    "is_temp_name",
    "split",
]
