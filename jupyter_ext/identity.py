"""A browser stays the same person when its Jupyter server comes back on another port.

With token (or password) login, jupyter_server makes each browser a random anonymous user
(a uuid4 hex username, "Anonymous Callisto", initials "AC") and keeps it only in the login
cookie, whose name is ``username-<host>-<port>`` (``IdentityProvider.get_cookie_name``, so
that servers on one host do not share logins). A server restarted on another port (8888 was
taken, ``--port=0``, a proxy's choice) finds no cookie of that name and makes the same browser
a new person: the avatar, and the name on decided approvals and in the action log, change.
The cookie secret is not the cause: jupyter_server keeps it in
``<runtime dir>/jupyter_cookie_secret`` (0600) across restarts.

:class:`ThinkIdentityProvider` keeps the person it made in a second signed cookie whose name
has no port, and gives that person back where jupyter_server would make a new one. The
cookie authenticates nothing: jupyter_server asks for an anonymous user only once the token,
the password or the login cookie has let the request in, so the token still gates
everything; another browser has no such cookie and is another person.

    install(serverapp)   # when the extension links, before the server builds its provider
"""

from __future__ import annotations

import hashlib
from typing import Any

from jupyter_server.auth.identity import PasswordIdentityProvider, User
from tornado import web
from traitlets import Int

COOKIE_PREFIX = "jupyter-person-"


class ThinkIdentityProvider(PasswordIdentityProvider):
    """jupyter_server's token and password login, keeping a browser's person on a new port."""

    person_cookie_days = Int(
        365,
        config=True,
        help="Days a browser keeps the person it was given (its anonymous name, initials and "
        "user id) when it comes back to a restarted server. The cookie grants no access. "
        "Default: 365.",
    )

    def generate_anonymous_user(self, handler: web.RequestHandler) -> User:
        """The person this browser was given before, else a new one (remembered)."""
        user = self.remembered(handler) or super().generate_anonymous_user(handler)
        self.remember(handler, user)
        return user

    def persist_user_model(self, handler: web.RequestHandler) -> None:
        """Keep a changed name or colour (``PATCH /api/me``) for later restarts too."""
        super().persist_user_model(handler)
        self.remember(handler, handler.current_user)

    def person_cookie_name(self, handler: web.RequestHandler) -> str:
        """The person cookie's name: no port in it, and a fingerprint of the cookie secret,
        so servers of one Jupyter user (one secret file) share the person while servers
        with another secret (another account on the host) never overwrite it."""
        secret = handler.settings.get("cookie_secret") or b""
        if isinstance(secret, str):
            secret = secret.encode()
        elif not isinstance(secret, bytes):  # tornado's versioned secrets: a dict of keys
            secret = repr(sorted(secret.items())).encode()
        return COOKIE_PREFIX + hashlib.sha256(secret).hexdigest()[:12]

    def remembered(self, handler: web.RequestHandler) -> User | None:
        """The person of this browser's person cookie (valid signature), or None."""
        raw = handler.get_secure_cookie(
            self.person_cookie_name(handler), max_age_days=self.person_cookie_days + 1
        )
        if not raw:
            return None
        try:
            return self.user_from_cookie(raw.decode())
        except Exception:  # a cookie of an older format: the browser gets a new person
            self.log.debug("Think: person cookie not read", exc_info=True)
            return None

    def remember(self, handler: web.RequestHandler, user: Any) -> None:
        """Set the person cookie, with the login cookie's options (path, secure, httponly)."""
        if not isinstance(user, User):
            return
        options: dict[str, Any] = {**self.cookie_options}
        options.setdefault("httponly", True)
        secure = self.secure_cookie
        if secure is None:
            secure = handler.request.protocol == "https"
        if secure:
            options.setdefault("secure", True)
        options.setdefault("path", getattr(handler, "base_url", "/"))
        options.setdefault("expires_days", self.person_cookie_days)
        handler.set_secure_cookie(
            self.person_cookie_name(handler), self.user_to_cookie(user), **options
        )


def install(serverapp: Any) -> bool:
    """Make :class:`ThinkIdentityProvider` the server's identity provider, unless one was
    configured (``ServerApp.identity_provider_class``, or a legacy
    ``ServerApp.login_handler_class``) or set by other code: then nothing changes."""
    configured = serverapp.config.get("ServerApp", {})
    if "identity_provider_class" in configured or "login_handler_class" in configured:
        return False
    if serverapp.identity_provider_class is not PasswordIdentityProvider:
        return False
    serverapp.identity_provider_class = ThinkIdentityProvider
    return True
