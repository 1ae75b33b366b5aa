"""The fencing epoch counter (``<root>/<cluster>/manager/epoch``): read, bumped with
compare-and-set on every acquisition of leadership, and checked by every fenced write."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NoNodeError, RolledBackError
from kazoo.handlers.threading import KazooTimeoutError

from manager.coordination.fenced import FencedError
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


def commit_fenced(
    client: KazooClient,
    path: str,
    held: tuple[int, int],
    add_op: Callable[[Any], Any],
    what: str,
    holder: str,
) -> list[Any]:
    """``add_op``'s writes in one transaction that also checks the counter's version is still
    the one ``held`` (epoch, version) was taken at: its results, ``[epoch check, add_op's...]``,
    each a result or the exception that failed it; FencedError when a newer leader exists."""
    epoch, version = held
    tx = client.transaction()
    tx.check(path, version)
    add_op(tx)
    try:
        results: list[Any] = tx.commit()
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"ZooKeeper unreachable: cannot {what}: {exc!r}") from exc
    # A failed transaction reports RolledBackError for the operations that were fine.
    if isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
        newest = "unknown"
        with contextlib.suppress(CoordinationError):
            newest = str(read_epoch(client, path)[0])
        raise FencedError(
            f"instance {holder} holds epoch {epoch} but a newer leader "
            f"(epoch {newest}) exists: refused to {what}"
        )
    return results
