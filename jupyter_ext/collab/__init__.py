"""Server side of the collaboration rooms: the agent's edits, room files on disk, the Yjs
history store, where people type, and running a notebook cell in its own kernel."""
