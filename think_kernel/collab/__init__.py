"""The agent's file and notebook access through the collaboration rooms (see issue 5)."""
