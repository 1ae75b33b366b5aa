"""The soak's network episodes, on a shaped cluster (kmedic.localcluster.links): a broker cut
off from the controllers until kmedic has healed it, two brokers cut off from each other for a
while, a broker's link slowed. Each says what it did on the run's timeline and leaves every
link as it found it, whatever happens on the way."""

from __future__ import annotations

import threading
import time
from typing import Protocol

from composition.soak import probes
from composition.soak.schedule import SLOW_LINK_FACTOR, Episode, Overlap, peer_of
from kmedic.localcluster import LocalCluster


class Timeline(Protocol):
    def say(self, what: str) -> None: ...


class Rig(Protocol):
    """What a network episode needs of the run (composition.soak.run.Rig)."""

    cluster: LocalCluster
    cut_off: set[int]
    episode_over: threading.Event

    def leader(self) -> str | None: ...

    @property
    def timeline(self) -> Timeline: ...

    @property
    def bootstrap(self) -> str: ...

    def whole(self) -> bool: ...

    def start_overlaps(
        self, overlaps: tuple[Overlap, ...], anchor: float | None
    ) -> list[threading.Thread]: ...

    def join(self, threads: list[threading.Thread]) -> None: ...


HEAL_WAIT_S = 420


def isolate(rig: Rig, episode: Episode) -> None:
    """Cut the broker off from the controllers; wait until kmedic has healed it (no replica
    left on it, every partition whole, read through the other brokers: a fenced broker
    still answers with the metadata it had when it was cut); then mend the link. The
    overlaps run meanwhile, mid-heal."""
    say, cluster, broker = rig.timeline.say, rig.cluster, episode.broker
    cut = cluster.cut_from_controllers(broker)
    rig.cut_off.add(broker)
    say(f"broker {broker} cut off from the controllers (it still serves its clients)")
    threads = rig.start_overlaps(episode.overlaps, None)
    try:

        def healed() -> bool:
            return not probes.replicas_on(rig.bootstrap, broker) and rig.whole()

        probes.wait(healed, HEAL_WAIT_S, f"broker {broker}'s replicas healed", interval_s=2)
        rig.episode_over.set()
        say(f"broker {broker} healed while cut off: it holds no replica, every partition whole")
        rig.join(threads)
    finally:
        cluster.mend(cut)
        rig.cut_off.discard(broker)
    say(f"broker {broker}'s link to the controllers mended")
    probes.wait(
        lambda: broker in probes.registered(rig.bootstrap), 120, f"broker {broker} registered"
    )
    say(f"broker {broker} registered again (a spare)")


def peer_cut(rig: Rig, episode: Episode) -> None:
    """Cut two brokers off from each other for ``hold_s``, then mend the link."""
    say, cluster = rig.timeline.say, rig.cluster
    a, b = episode.broker, peer_of(episode.broker, len(cluster.broker_ids))
    cut = cluster.cut_between(a, b)
    say(f"brokers {a} and {b} cut off from each other")
    threads = rig.start_overlaps(episode.overlaps, time.monotonic())
    try:
        time.sleep(episode.hold_s)
    finally:
        cluster.mend(cut)
    say(f"the link between brokers {a} and {b} mended after {episode.hold_s:.0f} s")
    rig.join(threads)


def slow_link(rig: Rig, episode: Episode) -> None:
    """Slow the broker's link to a tenth for ``hold_s``, then give it back its speed."""
    say, cluster, broker = rig.timeline.say, rig.cluster, episode.broker
    assert cluster.nic_mbps is not None
    slow = cluster.nic_mbps * SLOW_LINK_FACTOR
    cluster.set_link_rate(broker, slow)
    say(f"broker {broker}'s link slowed to {slow:g} Mbit/s")
    threads = rig.start_overlaps(episode.overlaps, time.monotonic())
    try:
        time.sleep(episode.hold_s)
    finally:
        cluster.set_link_rate(broker)
    say(f"broker {broker}'s link back to {cluster.nic_mbps} Mbit/s after {episode.hold_s:.0f} s")
    rig.join(threads)


def audit_cut(rig: Rig, overlap: Overlap, audit_topic: str) -> None:
    """Cut the leading manager off the broker that leads its audit topic (and only that one)
    for ``hold_s``: its records go to its spool, and are replayed in order once it is back."""
    say = rig.timeline.say
    leading = rig.leader()
    if leading is None:
        say("audit_cut: no manager leads at that moment; nothing cut")
        return
    broker = probes.leader_of(rig.bootstrap, audit_topic)
    if broker < 0:
        say(f"audit_cut: {audit_topic} has no leader at that moment; nothing cut")
        return
    cut = rig.cluster.cut_client(f"manager-{leading}", [broker])
    say(f"leading manager {leading} cut off broker {broker}, its audit topic's leader, alone")
    try:
        time.sleep(overlap.hold_s)
    finally:
        rig.cluster.mend(cut)
    say(f"{leading}'s link to broker {broker} back after {overlap.hold_s:.0f} s")
