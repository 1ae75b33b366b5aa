"""Who may touch kmedic's znodes: ZooKeeper digest authentication and the ACLs kmedic puts on
everything it creates.

Rules, kept exactly:

- kmedic's own identity authenticates its session (``auth_data``) and gets every permission on
  every znode kmedic creates; nobody else gets write, create, delete or admin.
- Optional readers (operators, monitoring) get read only. They are named by their digest id,
  ``name:base64(sha1(name:password))``, as ZooKeeper stores it, so kmedic never holds a
  reader's password (``reader_digest`` computes one).
- ACLs go on at creation (kazoo's ``default_acl``), and a tree found with other ACLs is
  reported at start, never silently trusted; it is changed only when asked (``fix``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from kmedic import secrets

DIGEST_ID = re.compile(r"^[^:\s]+:[A-Za-z0-9+/]{27}=$")


class ZooKeeperAuth(BaseModel):
    """The manager config's ``zookeeper.auth``: kmedic's digest identity and its readers."""

    # Validation errors never echo their input: it may hold a password.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    username: str = Field(min_length=1, pattern=r"^[^:\s]+$")
    password: SecretStr | None = None
    password_file: Path | None = Field(
        default=None, description="a file holding kmedic's ZooKeeper password (one line)"
    )
    password_in_config: bool = Field(
        default=False, description="accept a password written in clear in the config file"
    )
    readers: list[str] = Field(
        default_factory=list,
        description="digest ids (name:base64-sha1) given read-only access to kmedic's znodes",
    )

    @field_validator("readers")
    @classmethod
    def _digest_ids(cls, readers: list[str]) -> list[str]:
        bad = [r for r in readers if not DIGEST_ID.match(r)]
        if bad:
            raise ValueError(
                f"not a digest id (name:base64(sha1(name:password))): {', '.join(bad)}"
            )
        return readers

    @model_validator(mode="after")
    def _one_password(self) -> ZooKeeperAuth:
        if (self.password is None) == (self.password_file is None):
            raise ValueError("exactly one of password and password_file is required")
        return self

    def resolved_password(self) -> str:
        # Exactly one of the two is set (checked at validation).
        return secrets.resolve(self.password, self.password_file, "zookeeper.auth.password_file")

    def auth_data(self) -> list[tuple[str, str]]:
        """What kazoo sends to authenticate the session."""
        return [("digest", f"{self.username}:{self.resolved_password()}")]

    def acls(self) -> list[ACL]:
        """The ACL of every znode kmedic creates."""
        own = make_digest_acl_credential(self.username, self.resolved_password())
        return [ACL(Permissions.ALL, Id("digest", own))] + [
            ACL(Permissions.READ, Id("digest", r)) for r in self.readers
        ]


def kazoo_security(auth: ZooKeeperAuth | None) -> dict[str, Any]:
    """KazooClient keyword arguments: authenticate the session and put kmedic's ACL on every
    znode it creates; nothing without ``auth`` (an open ZooKeeper, as before)."""
    if auth is None:
        return {}
    return {"auth_data": auth.auth_data(), "default_acl": auth.acls()}


def reader_digest(name: str, password: str) -> str:
    """The digest id of a read-only identity, for ``readers`` (the password stays with you)."""
    return str(make_digest_acl_credential(name, password))


def describe(acl: ACL) -> str:
    """One ACL entry as ZooKeeper's CLI prints it: ``digest:name:hash:r`` (``cdrwa`` for all)."""
    letters = "".join(
        letter
        for letter, bit in (
            ("c", Permissions.CREATE),
            ("d", Permissions.DELETE),
            ("r", Permissions.READ),
            ("w", Permissions.WRITE),
            ("a", Permissions.ADMIN),
        )
        if acl.perms & bit
    )
    return f"{acl.id.scheme}:{acl.id.id}:{letters}"


def mismatched(found: Mapping[str, Sequence[ACL]], wanted: Sequence[ACL]) -> dict[str, str]:
    """The znodes whose ACL is not exactly ``wanted``, each with what it has instead."""
    want = sorted(describe(a) for a in wanted)
    return {
        path: ", ".join(sorted(describe(a) for a in acls))
        for path, acls in sorted(found.items())
        if sorted(describe(a) for a in acls) != want
    }


def walk_acls(client: Any, root: str) -> dict[str, list[ACL]]:
    """Every znode under ``root`` (itself included) and its ACL, read with ``client``."""
    return {path: list(client.get_acls(path)[0]) for path in _walk(client, root)}


def tree_problems(
    client: Any, root: str, cluster: str, auth: ZooKeeperAuth | None
) -> dict[str, str]:
    """The root and every znode of one cluster's tree whose ACL is not kmedic's, each with the
    ACL it has; empty without ``auth``."""
    if auth is None:
        return {}
    found = walk_acls(client, f"{root.rstrip('/')}/{cluster}")
    if client.exists(root) is not None:
        found[root] = list(client.get_acls(root)[0])
    return mismatched(found, auth.acls())


def fix_tree(client: Any, root: str, cluster: str, auth: ZooKeeperAuth | None) -> list[str]:
    """Put kmedic's ACL on every znode ``tree_problems`` reports (needs admin permission
    there); the paths changed."""
    wrong = sorted(tree_problems(client, root, cluster, auth))
    if auth is not None:
        for path in wrong:
            client.set_acls(path, auth.acls())
    return wrong


def _walk(client: Any, path: str) -> Iterator[str]:
    if client.exists(path) is None:
        return
    yield path
    for child in sorted(client.get_children(path)):
        yield from _walk(client, f"{path.rstrip('/')}/{child}")
