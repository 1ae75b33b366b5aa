"""bench_clients' rejoin scenario: what a broker's return costs the clients.

Broker 6 is SIGKILLed and stays away for ``away_s`` (its grace is an hour: nothing is healed)
while the acks=all producer writes on, so its replicas fall behind by what they missed; it is
then started again and fetches it all back. Windows, by when a record was produced: *baseline*
the minute before the kill; *catch-up* from the restart to every partition fully in sync and
broker 6 leading its preferred partitions again. The restart itself (the broker's start) is in
the catch-up window: it is the return's own cost, the same for every setting.

Kafka's own ``auto.leader.rebalance.enable`` is off on this cluster (``NO_AUTO_REBALANCE``):
kmedic hands the preferred leadership back, once 95 % of the broker's replicas are in sync, in
batches (docs/planner.md, "Rejoin"). With Kafka's on, its periodic check (every 5 minutes)
would move leaders at a time of its own, inside a later run's baseline.

Unthrottled, the catch-up fills broker 6's incoming link with what it missed; the writes it
follows again as soon as one partition is back in its ISR wait behind that copy. With kmedic's
catch-up throttle (docs/planner.md, "Rejoin") the copy is held to the throttle's rate, armed on
the leaders while broker 6 is still away.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench_heal import VICTIM, Race, start_kmedic, wait

from composition.pipeline import Pipeline
from kmedic.localcluster import process

REJOIN_GRACE_MS = 3_600_000  # away far shorter than this: no heal, a rejoin
NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}


@dataclass
class Rejoin:
    setting: int | str | None
    killed_at: float  # wall clock (s)
    restarted_at: float
    caught_up_at: float
    armed: list[str]  # the catch_up audit records' summaries
    rate_records: list[str]

    @property
    def catch_up_s(self) -> float:
        return self.caught_up_at - self.restarted_at


def rejoin(race: Race, n: int, setting: int | str | None, away_s: float, settle_s: float) -> Rejoin:
    """One away-and-back of broker 6 under kmedic with throttle ``setting``."""
    name = f"rejoin{n}"
    preferred = {k for k, v in race.placement().items() if v[0] == VICTIM}
    actions = f"kmedic.actions.{name}"
    port = process.free_ports(1)[0]
    pipeline = Pipeline(race.cluster, race.workdir / name, cluster_name=name)
    rf = {k: len(v) for k, v in race.placement().items()}
    try:
        policy = {"dead_grace_ms": REJOIN_GRACE_MS, "even_spread": False}
        start_kmedic(
            pipeline,
            name,
            port,
            policy,
            setting,
            executor=race.executor,
            agent_interval_s=race.agent_interval_s,
        )
        time.sleep(settle_s)  # a steady state before the kill: the baseline window
        killed = time.time()
        race.cluster.kill(VICTIM)
        wait(lambda: race.fenced(VICTIM), 60, f"broker {VICTIM} fenced")
        time.sleep(max(0.0, away_s - (time.time() - killed)))  # away: the scenario's length
        restarted = time.time()
        race.cluster.restart(VICTIM)
        wait(lambda: race.in_sync(rf, None), 900, f"broker {VICTIM} caught up")
        wait(lambda: race.leads(VICTIM) >= preferred, 300, f"broker {VICTIM} leading again")
        caught_up = time.time()
        records = race.audit(actions, bool)
    finally:
        pipeline.stop()
    return Rejoin(
        setting,
        killed,
        restarted,
        caught_up,
        [r.summary for r in records if r.kind == "catch_up"],
        [r.summary for r in records if "throttle rates set" in r.summary],
    )
