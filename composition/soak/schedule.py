"""The soak's fault schedule, drawn from a seed (pure): the same seed, length and brokers give
the same schedule, printed and saved so that a failing run can be run again.

The schedule is a list of episodes, run one after the other; each waits for a whole cluster
(every partition fully replicated, no reassignment) before it starts, so that two broker
faults never overlap - with RF 3 and ``min.insync.replicas`` 2, two brokers out at once stop
acks=all writes and kmedic rightly refuses to heal (too many dead brokers). What overlaps is
the rest: a heal episode may also kill the leading manager in the middle of the heal, pause
ZooKeeper or kill the Spark job.

Episode kinds:
- ``heal``: a broker SIGKILLed and kept down past the grace period: kmedic heals it; the
  broker is restarted once the heal is over (empty, it joins as a spare);
- ``bounce``: a broker SIGKILLed and restarted inside the grace period: nothing moves, nothing
  pages;
- ``pause``: a broker SIGSTOPped for a few seconds (less than the broker session timeout),
  then resumed: nothing moves, nothing pages;
- ``hang``: a broker SIGSTOPped for longer than the broker session timeout (a long GC pause:
  the controller fences it) but less than the grace period, then resumed: it registers
  again, nothing moves, nothing pages;
- ``disk``: one of a broker's two log directories made unusable (a failed disk; the broker
  stays up): kmedic heals the replicas that lived there; the disk is then replaced (an empty
  directory) and the broker restarted;
- ``drain``: an operator drains a broker (``kmedic drain``), then fills it back (``kmedic
  fill``: a done drain keeps its broker cordoned until a fill names it); both end ``done``;
- ``audit_outage``: every broker holding a replica of the audit topic killed at once and
  restarted a few seconds later, inside the grace: the managers' audit records go to their
  spools and are replayed in order once the topic is back. Three of six brokers down at once
  is more than kmedic heals (``too_many_dead_brokers``), but while they are inside their
  grace it is a wait: nothing moves, nothing pages.

On a shaped cluster (``kmedic soak --nic-mbps N``: every node on its own address in a network
namespace of the cluster's own, kmedic.localcluster.links) the network's faults are drawn too:
- ``isolate``: a broker cut off from the controllers (every packet between them dropped)
  while its clients still reach it: fenced once its session times out, healed after the
  grace, then its link mended (it joins again with nothing to hold, a spare);
- ``peer_cut``: two brokers on different racks cut off from each other for ``hold_s``: each
  drops out of the ISRs the other leads, kmedic refuses on unexplained under-replication
  (moving data would not mend a link) and pages only if it lasts (``lag_alert_after_s``, 5
  minutes): nothing moves, nothing pages;
- ``slow_link``: one broker's link slowed to a tenth for ``hold_s``, then back: nothing moves
  and nothing pages (the slow-broker score demotes it only where its probes show it slow).
And, overlapping about one episode in seven from a stream of its own, ``audit_cut``: the
leading manager cut off the broker that leads its audit topic, alone, for 10-40 s: its records
go to its spool and reach the topic in order once the link is back; nothing pages.

Overlapping faults (``Overlap``), at an offset into their episode: ``manager_kill`` (the
leading manager SIGKILLed, then started again as a standby), ``zookeeper_pause`` (SIGSTOP for
a few seconds), ``stream_kill`` (the Spark job stopped; started again at the episode's end).

A session loss overlaps some episodes too, drawn from a stream of its own: ``session_loss``
(ZooKeeper SIGSTOPped for two to three times the managers' session timeout: every manager's
session expires, the leader must stop writing once it cannot prove its lease, and a leader
of a new epoch adopts the plan in flight). A leader cut overlaps some others, from a fourth
stream: ``leader_cut`` (the leading manager's own link to ZooKeeper cut for two to three
sessions while it still reaches Kafka - the split-brain case fencing exists for: the other
manager must take over and the cut one start nothing once cut, then come back a standby),
and from a fifth, ``leader_drop``: the same link silently dropped (nothing tells the manager;
its session expires on ZooKeeper's clock, and its lease must have ended before).

On a three-voter controller quorum, a second stream of the same seed adds controller faults
to about a third of the episodes (the episodes themselves stay the seed's): ``voter_kill``
(a voter that does not lead the quorum SIGKILLed, started again ``hold_s`` later: two of
three keep it led) and ``quorum_leader_kill`` (the active controller: the others elect a new
leader within seconds, during which Kafka commits nothing).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

EpisodeKind = Literal[
    "heal",
    "bounce",
    "pause",
    "hang",
    "disk",
    "drain",
    "audit_outage",
    "isolate",
    "peer_cut",
    "slow_link",
    "refused_heal",
]
OverlapKind = Literal[
    "manager_kill",
    "zookeeper_pause",
    "stream_kill",
    "voter_kill",
    "quorum_leader_kill",
    "session_loss",
    "leader_cut",
    "leader_drop",
    "audit_cut",
]

EPISODE_KINDS: tuple[EpisodeKind, ...] = (
    "heal",
    "bounce",
    "pause",
    "hang",
    "disk",
    "drain",
    "audit_outage",
)
# On a shaped cluster (its own network namespace) the network faults are drawn too.
NETWORK_KINDS: tuple[EpisodeKind, ...] = ("isolate", "peer_cut", "slow_link")
SLOW_LINK_FACTOR = 0.1  # a slow link runs at this share of the cluster's link speed
OVERLAP_KINDS: tuple[OverlapKind, ...] = ("manager_kill", "zookeeper_pause", "stream_kill")
QUORUM_KINDS: tuple[OverlapKind, ...] = ("voter_kill", "quorum_leader_kill")
QUORUM_FAULT_SHARE = 0.35  # of the episodes that get a controller fault, on three voters
SESSION_LOSS_SHARE = 0.15  # of the episodes whose managers lose their ZooKeeper sessions
LEADER_CUT_SHARE = 0.15  # of the episodes whose leading manager is cut off ZooKeeper alone
LEADER_DROP_SHARE = 0.15  # of those whose leading manager's packets to it are silently dropped
AUDIT_CUT_SHARE = 0.15  # of the episodes whose leading manager is cut off its audit topic's leader
# Length of each episode as measured on this machine (seed 4242, 15 minutes asked): a heal
# 60 s (grace, copy at 1 MB/s, restart), a bounce 9 s, a pause 7-12 s, a hang 11-13 s, a disk
# about 35 s, a drain 17-47 s; the schedule fits about ``length_s`` of them.
EPISODE_S: dict[EpisodeKind, float] = {
    "heal": 65.0,
    "bounce": 10.0,
    "pause": 10.0,
    "hang": 13.0,
    "disk": 40.0,
    "drain": 35.0,
    "audit_outage": 40.0,
    "isolate": 70.0,
    "peer_cut": 45.0,
    "slow_link": 40.0,
    # Not drawn: the grace, REFUSED_HOLD_S, and the two brokers' restart and catch-up
    # (250 s measured, seed 10, 2026-12-06).
    "refused_heal": 250.0,
}
# What an overlap adds to its episode, measured the same way: a Spark job kill ends when the
# job writes loads again (136-158 s on a busy machine, 2026-11-29), a leader cut or drop and a
# session loss when a manager leads again (8-10 s more than the episode alone, seed 10).
OVERLAP_S: dict[str, float] = {
    "stream_kill": 150.0,
    "leader_cut": 8.0,
    "leader_drop": 8.0,
    "session_loss": 10.0,
}


# The pages an episode warrants: each must fire in the run's Prometheus within its episode
# (and a minute after, for the rules' evaluation and a scrape), and nothing else may.
WARRANTED: dict[str, tuple[str, ...]] = {"refused_heal": ("KmedicRefusingToHeal",)}
# How long past the grace two dead brokers stay dead: KmedicRefusingToHeal's `for` (2 m)
# and 45 s for the cycle, the scrape and the evaluation to see it.
REFUSED_HOLD_S = 165.0


@dataclass(frozen=True)
class Overlap:
    kind: OverlapKind
    # Seconds after the episode's fault (for a heal: after its moves have started running,
    # so that a killed manager dies mid-heal).
    offset_s: float
    hold_s: float  # how long ZooKeeper stays paused, a controller down or a leader cut off

    def sentence(self) -> str:
        held = f" for {self.hold_s:.0f} s" if self.hold_s else ""
        return f"{self.kind}{held} at +{self.offset_s:.0f} s"


@dataclass(frozen=True)
class Episode:
    kind: EpisodeKind
    broker: int
    hold_s: float  # bounce: down this long; pause: stopped this long; else 0
    overlaps: tuple[Overlap, ...] = ()

    @property
    def warrants(self) -> tuple[str, ...]:
        """The alerts this episode must page with (composition.soak.invariants.pages)."""
        return WARRANTED.get(self.kind, ())

    def sentence(self) -> str:
        what = {
            "heal": f"broker {self.broker} killed past its grace (a heal)",
            "bounce": f"broker {self.broker} killed and restarted after {self.hold_s:.0f} s",
            "pause": f"broker {self.broker} paused (SIGSTOP) for {self.hold_s:.0f} s",
            "hang": f"broker {self.broker} hung (SIGSTOP, fenced) for {self.hold_s:.0f} s",
            "disk": f"broker {self.broker} lost a log directory (a failed disk)",
            "audit_outage": f"every broker of the audit topic killed for {self.hold_s:.0f} s",
            "drain": f"broker {self.broker} drained by an operator",
            "isolate": f"broker {self.broker} cut off from the controllers past its grace "
            "(fenced, still serving its clients: a heal)",
            "peer_cut": f"brokers {self.broker} and {peer_of(self.broker)} cut off from each "
            f"other for {self.hold_s:.0f} s",
            "slow_link": f"broker {self.broker}'s link slowed to a tenth for {self.hold_s:.0f} s",
            "refused_heal": f"brokers {self.broker} and {peer_of(self.broker)} killed together "
            f"for {self.hold_s:.0f} s, one more than max_dead_brokers: the heal refused, a page "
            f"warranted ({', '.join(self.warrants)})",
        }[self.kind]
        extra = "; ".join(o.sentence() for o in self.overlaps)
        return what + (f", with {extra}" if extra else "")


@dataclass(frozen=True)
class Schedule:
    seed: int
    episodes: tuple[Episode, ...] = field(default_factory=tuple)

    def lines(self) -> list[str]:
        return [f"{i + 1}. {e.sentence()}" for i, e in enumerate(self.episodes)]

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "episodes": [asdict(e) for e in self.episodes]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True)

    def estimated_s(self) -> float:
        """How long its episodes take on this machine on a good day (``EPISODE_S``, and what
        their overlaps add, ``OVERLAP_S``)."""
        return sum(_estimated(e) for e in self.episodes)

    def fault_count(self) -> int:
        return sum(1 + len(e.overlaps) for e in self.episodes)

    def first(self, count: int) -> Schedule:
        """The first ``count`` episodes (those a time-boxed run got to)."""
        return Schedule(self.seed, self.episodes[:count])

    def with_warranted_page(self, grace_s: float) -> Schedule:
        """This schedule with, second (after the failover every run sees), an episode whose
        page must fire: two brokers dead at once, one more than the soak's max_dead_brokers,
        held past the grace and the refusal's page ``for`` (``REFUSED_HOLD_S`` beyond)."""
        refused = Episode("refused_heal", 2, round(grace_s + REFUSED_HOLD_S, 1))
        return Schedule(self.seed, (*self.episodes[:1], refused, *self.episodes[1:]))

    def with_leader_drop(self, session_s: float, at_s: float) -> Schedule:
        """This schedule with the leading manager's packets to ZooKeeper silently dropped in
        its second episode (the first has its manager kill), ``at_s`` into it, for two and a
        half of the managers' sessions: a short run sees its lease lost the silent way too."""
        if len(self.episodes) < 2:
            raise ValueError("a leader drop needs a second episode (the warranted page's)")
        second = self.episodes[1]
        drop = Overlap("leader_drop", round(at_s, 1), round(2.5 * session_s, 1))
        kept = tuple(o for o in second.overlaps if o.kind not in ("leader_cut", "session_loss"))
        second = replace(second, overlaps=(*kept, drop))
        return Schedule(self.seed, (self.episodes[0], second, *self.episodes[2:]))

    def with_audit_outage(self, grace_s: float) -> Schedule:
        """This schedule and, at its end, every broker of the audit topic killed at once."""
        outage = Episode("audit_outage", 0, round(0.3 * grace_s, 1))
        return Schedule(self.seed, (*self.episodes, outage))


def draw(
    seed: int,
    *,
    length_s: float,
    brokers: list[int],
    grace_s: float,
    session_timeout_s: float,
    stream: bool = True,
    controllers: int = 1,
    manager_session_s: float | None = None,
    network: bool = False,
) -> Schedule:
    """Episodes that fit in about ``length_s``. The first is always a heal whose leading
    manager is killed in the middle of it, overlapped by a second fault: the faults a run of
    any length must see. Without the Spark job (``stream`` False) none kills it, and no drain
    is drawn: its fill is a balance, which waits for loads the job alone writes (found by a
    4-minute run: the fill refused on stale loads for its whole 400 s). With three
    controllers or more, controller faults overlap some episodes (``_quorum_faults``); with
    the managers' session timeout given, session losses overlap some (``_session_losses``).
    With ``network`` (a shaped cluster) the network's episodes are drawn among the others;
    without it every seed draws what it drew before they existed."""
    rng = random.Random(seed)
    episode_kinds = EPISODE_KINDS + NETWORK_KINDS if network else EPISODE_KINDS
    if not stream:
        episode_kinds = tuple(k for k in episode_kinds if k != "drain")
    kinds = OVERLAP_KINDS if stream else tuple(k for k in OVERLAP_KINDS if k != "stream_kill")
    second = [k for k in kinds if k != "manager_kill"]
    first = Episode(
        "heal",
        rng.choice(brokers),
        0.0,
        (Overlap("manager_kill", _mid_heal(rng), 0.0), _overlap(rng, rng.choice(second))),
    )
    episodes = [first]
    spent = EPISODE_S["heal"]
    while True:
        kind = rng.choice(episode_kinds)
        if spent + EPISODE_S[kind] > length_s:
            break
        spent += EPISODE_S[kind]
        broker = rng.choice(brokers)
        hold = 0.0
        if kind == "audit_outage":
            broker = 0  # its brokers are those of the audit topic
            hold = round(rng.uniform(0.2, 0.3) * grace_s, 1)
        elif kind == "bounce":
            # Plus the restart itself (5-10 s): back well inside the grace.
            hold = round(rng.uniform(0.1, 0.3) * grace_s, 1)
        elif kind == "pause":
            hold = round(rng.uniform(0.3, 0.7) * session_timeout_s, 1)
        elif kind == "hang":
            # Past the session timeout (fenced), back well inside the grace.
            hold = round(
                session_timeout_s + rng.uniform(0.2, 0.4) * (grace_s - session_timeout_s), 1
            )
        elif kind == "peer_cut":
            # Mostly past replica.lag.time.max.ms (10 s on the local cluster): the ISRs shrink,
            # kmedic refuses on unexplained lag, and the link is back long before it pages.
            hold = round(rng.uniform(8.0, 40.0), 1)
        elif kind == "slow_link":
            hold = round(rng.uniform(20.0, 40.0), 1)
        overlaps: tuple[Overlap, ...] = ()
        if rng.random() < 0.5:
            overlaps = (_overlap(rng, rng.choice(kinds)),)
        episodes.append(Episode(kind, broker, hold, overlaps))
    if controllers >= 3:
        episodes = _quorum_faults(seed, episodes)
    if manager_session_s is not None:
        episodes = _session_losses(seed, episodes, manager_session_s)
        episodes = _leader_cuts(seed, episodes, manager_session_s)
        episodes = _leader_drops(seed, episodes, manager_session_s)
    if network:
        episodes = _audit_cuts(seed, episodes)
    # The overlaps drawn, the episodes that no longer fit in ``length_s`` are left out: an
    # hour's schedule must run in about an hour (the first always stays).
    while len(episodes) > 1 and sum(_estimated(e) for e in episodes) > length_s:
        episodes.pop()
    return Schedule(seed, tuple(episodes))


def _estimated(episode: Episode) -> float:
    return EPISODE_S[episode.kind] + sum(OVERLAP_S.get(o.kind, 0.0) for o in episode.overlaps)


def _audit_cuts(seed: int, episodes: list[Episode]) -> list[Episode]:
    """The leading manager cut off the broker that leads its audit topic (and only that one)
    for 10-40 s, on about ``AUDIT_CUT_SHARE`` of ``episodes``, from a stream of its own: not
    the first, not where the audit topic's brokers are killed, not beside a leader cut."""
    rng = random.Random(f"{seed}:audit")
    out = episodes[:1]
    for episode in episodes[1:]:
        if rng.random() < AUDIT_CUT_SHARE:
            fault = Overlap(
                "audit_cut", round(rng.uniform(0.0, 6.0), 1), round(rng.uniform(10.0, 40.0), 1)
            )
            if episode.kind != "audit_outage" and all(
                o.kind not in ("leader_cut", "leader_drop") for o in episode.overlaps
            ):
                episode = replace(episode, overlaps=(*episode.overlaps, fault))
        out.append(episode)
    return out


def peer_of(broker: int, brokers: int = 6) -> int:
    """The other end of a ``peer_cut``: the next broker, on the next rack (brokers go round
    the racks in order: 1 /r1, 2 /r2, 3 /r3, 4 /r1...)."""
    return broker % brokers + 1


def _session_losses(seed: int, episodes: list[Episode], session_s: float) -> list[Episode]:
    """ZooKeeper paused past the managers' session on about ``SESSION_LOSS_SHARE`` of
    ``episodes``, from a stream of its own; one pause of ZooKeeper at a time: not beside a
    shorter one."""
    return _past_sessions(
        random.Random(f"{seed}:session"), episodes, "session_loss", SESSION_LOSS_SHARE,
        session_s, beside_none_of={"zookeeper_pause"},
    )  # fmt: skip


def _leader_cuts(seed: int, episodes: list[Episode], session_s: float) -> list[Episode]:
    """The leading manager cut off ZooKeeper alone on about ``LEADER_CUT_SHARE`` of
    ``episodes``, from a stream of its own; not beside a pause of ZooKeeper, which would cut
    everybody."""
    return _past_sessions(
        random.Random(f"{seed}:cut"), episodes, "leader_cut", LEADER_CUT_SHARE, session_s,
        beside_none_of={"zookeeper_pause", "session_loss"},
    )  # fmt: skip


def _leader_drops(seed: int, episodes: list[Episode], session_s: float) -> list[Episode]:
    """The leading manager's packets to ZooKeeper silently dropped on about
    ``LEADER_DROP_SHARE`` of ``episodes``, from a stream of its own (the other draws stay as
    they were); not beside another fault of ZooKeeper or of the leader's link to it."""
    return _past_sessions(
        random.Random(f"{seed}:drop"), episodes, "leader_drop", LEADER_DROP_SHARE, session_s,
        beside_none_of={"zookeeper_pause", "session_loss", "leader_cut"},
    )  # fmt: skip


def _past_sessions(
    rng: random.Random,
    episodes: list[Episode],
    kind: OverlapKind,
    share: float,
    session_s: float,
    beside_none_of: set[str],
) -> list[Episode]:
    """``kind`` held for two to three of the managers' sessions on about ``share`` of
    ``episodes``: not the first (its manager kill is the failover every run must see), and
    not beside a fault in ``beside_none_of``."""
    out = episodes[:1]
    for episode in episodes[1:]:
        if rng.random() < share:
            fault = Overlap(
                kind,
                round(rng.uniform(0.0, 6.0), 1),
                round(rng.uniform(2.0, 3.0) * session_s, 1),
            )
            if all(o.kind not in beside_none_of for o in episode.overlaps):
                episode = replace(episode, overlaps=(*episode.overlaps, fault))
        out.append(episode)
    return out


def _quorum_faults(seed: int, episodes: list[Episode]) -> list[Episode]:
    """A controller fault added to about ``QUORUM_FAULT_SHARE`` of ``episodes``, drawn from a
    stream of its own: the seed's episodes and their other faults stay as they were."""
    rng = random.Random(f"{seed}:quorum")
    out = []
    for episode in episodes:
        if rng.random() < QUORUM_FAULT_SHARE:
            fault = Overlap(
                rng.choice(QUORUM_KINDS),
                round(rng.uniform(0.0, 6.0), 1),
                round(rng.uniform(4.0, 12.0), 1),
            )
            episode = replace(episode, overlaps=(*episode.overlaps, fault))
        out.append(episode)
    return out


def _mid_heal(rng: random.Random) -> float:
    """Seconds after the grace period: the heal's first moves have started."""
    return round(rng.uniform(2.0, 5.0), 1)


def _overlap(rng: random.Random, kind: OverlapKind) -> Overlap:
    offset = round(rng.uniform(0.0, 6.0), 1)
    hold = round(rng.uniform(3.0, 8.0), 1) if kind == "zookeeper_pause" else 0.0
    return Overlap(kind, offset, hold)
