"""kmedic's ZooKeeper identity and ACLs, as pure logic: the settings, the ACL list, and which
znodes of a tree do not carry it."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
import yaml
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions
from pydantic import ValidationError

from kmedic.config import describe_validation_error
from kmedic.errors import ConfigError
from manager.config import load_manager_config
from manager.coordination.acls import ZooKeeperAuth, describe, mismatched, reader_digest

OPS = reader_digest("ops", "ops-password")


def auth(**extra: object) -> ZooKeeperAuth:
    return ZooKeeperAuth.model_validate(
        {"username": "kmedic", "password": "zk-secret", "readers": [OPS], **extra}
    )


def test_kmedic_gets_everything_and_readers_read_only() -> None:
    acls = auth().acls()
    assert [describe(a) for a in acls] == [
        f"digest:{reader_digest('kmedic', 'zk-secret')}:cdrwa",
        f"digest:{OPS}:r",
    ]
    assert auth().auth_data() == [("digest", "kmedic:zk-secret")]


def test_the_digest_is_zookeepers() -> None:
    # ZooKeeper's DigestAuthenticationProvider: base64(sha1("name:password")); the real server
    # accepting it is tested in tests/integration/test_zk_acls.py.
    expected = base64.b64encode(hashlib.sha1(b"super:adminsecret").digest()).decode()
    assert reader_digest("super", "adminsecret") == f"super:{expected}"


def test_the_password_comes_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "zk-password"
    secret.write_text("from-a-file\n")
    a = auth(password=None, password_file=str(secret))
    assert a.auth_data() == [("digest", "kmedic:from-a-file")]
    secret.unlink()
    with pytest.raises(ConfigError, match=r"zookeeper\.auth\.password_file: .*cannot read it"):
        a.acls()


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"password": None}, "exactly one of password and password_file"),
        ({"password_file": "/x"}, "exactly one of password and password_file"),
        ({"readers": ["ops:ops-password"]}, "not a digest id"),
        ({"username": "a:b"}, "username"),
        ({"pasword": "x"}, "did you mean 'password'"),
    ],
)
def test_bad_settings_are_named_and_the_password_never_shown(
    settings: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        auth(**settings)
    shown = describe_validation_error(caught.value, "manager.yaml", ZooKeeperAuth)
    assert problem in shown
    assert "zk-secret" not in shown and "zk-secret" not in str(caught.value)


def test_a_zookeeper_password_in_a_config_file_needs_the_operators_word(tmp_path: Path) -> None:
    path = tmp_path / "manager.yaml"
    zk = {"zk_connect": "z:2181", "auth": {"username": "kmedic", "password": "zk-secret"}}
    path.write_text(yaml.safe_dump({"cluster": "c1", "bootstrap": "b:9092", "zookeeper": zk}))
    with pytest.raises(ConfigError, match=r"zookeeper\.auth\.password: a password in clear"):
        load_manager_config(path)


def test_mismatched_reports_open_and_foreign_acls_with_what_they_hold() -> None:
    wanted = auth().acls()
    foreign = [ACL(Permissions.ALL, Id("digest", reader_digest("mallory", "x")))]
    found = {
        "/kmedic": list(wanted),
        "/kmedic/c": list(reversed(wanted)),  # the same entries in another order
        "/kmedic/c/manager": list(OPEN_ACL_UNSAFE),
        "/kmedic/c/manager/plan": foreign,
        "/kmedic/c/manager/epoch": wanted[:1],  # the reader's entry missing
    }
    assert mismatched(found, wanted) == {
        "/kmedic/c/manager": "world:anyone:cdrwa",
        "/kmedic/c/manager/epoch": describe(wanted[0]),
        "/kmedic/c/manager/plan": describe(foreign[0]),
    }
