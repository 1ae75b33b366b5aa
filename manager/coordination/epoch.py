"""The fencing epoch counter (``<root>/<cluster>/manager/epoch``): read, and bumped with
compare-and-set on every acquisition of leadership."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from manager.coordination.znodes import CoordinationError, parse_epoch

MAX_TRIES = 20


def read_epoch(client: KazooClient, path: str) -> tuple[int, int]:
    """The counter's value and the znode's version (created at 0 when missing)."""
    try:
        data, stat = client.get(path)
    except NoNodeError:
        client.ensure_path(path)
        data, stat = client.get(path)
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"cannot read {path}: {exc!r}") from exc
    return parse_epoch(data, path), int(stat.version)


def bump_epoch(client: KazooClient, path: str) -> tuple[int, int]:
    """The next epoch, taken with compare-and-set, and the znode's new version."""
    for _ in range(MAX_TRIES):
        counter, stat_version = read_epoch(client, path)
        try:
            stat = client.set(path, str(counter + 1).encode(), version=stat_version)
        except BadVersionError:
            continue
        return counter + 1, int(stat.version)
    raise CoordinationError(f"could not bump the epoch at {path}: contention")
