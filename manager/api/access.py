"""Who calls, and what they may do: the web config's ``basic_auth_users`` say who (every
request needs one of them when there are any, else 401), and its ``api_writers`` say who may
write (else 403). Without ``basic_auth_users`` every read is open and no write is: a write
must carry a name into the audit log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBasic, HTTPBasicCredentials

from kmedic.web_config import BasicAuth, WebConfig
from manager.api.problems import Problem

# Declares the scheme in the OpenAPI document; the check itself is BasicAuth's (bcrypt).
BASIC = HTTPBasic(auto_error=False, description="a user of the web config's basic_auth_users")
CHALLENGE = {"WWW-Authenticate": 'Basic realm="kmedic"'}
Basic = Annotated[HTTPBasicCredentials | None, Depends(BASIC)]


@dataclass(frozen=True)
class Caller:
    user: str | None  # None: no basic_auth_users configured, nobody named
    address: str
    may_write: bool

    @property
    def by(self) -> str:
        """The caller as stored in ZooKeeper and in the audit log."""
        return f"{self.user or 'anonymous'} via the API from {self.address}"


class Access:
    def __init__(self, web: WebConfig) -> None:
        self._auth = BasicAuth(web.basic_auth_users)
        self._writers = frozenset(web.api_writers)

    def caller(self, request: Request) -> Caller:
        address = request.client.host if request.client else "unknown"
        if not self._auth.enabled:
            return Caller(None, address, may_write=False)
        user = self._auth.user(request.headers.get("authorization"))
        if user is None:
            raise Problem(401, "a user and password of basic_auth_users are needed", CHALLENGE)
        return Caller(user, address, may_write=user in self._writers)

    def writer(self, request: Request) -> Caller:
        who = self.caller(request)
        if not who.may_write:
            name = f"user {who.user!r}" if who.user else "an anonymous caller"
            raise Problem(
                403,
                f"{name} may only read: writes need a user of basic_auth_users named in the "
                "web config's api_writers",
            )
        return who


def caller(request: Request, _: Basic = None) -> Caller:
    """The caller of a route that reads (the app's ``state.access`` decides)."""
    access: Access = request.app.state.access
    return access.caller(request)


def writer(request: Request, _: Basic = None) -> Caller:
    """The caller of a route that writes: one of ``api_writers``, else 403."""
    access: Access = request.app.state.access
    return access.writer(request)


Reader = Annotated[Caller, Depends(caller)]
Writer = Annotated[Caller, Depends(writer)]
