"""A fleet-size cluster for the whole-cycle benchmark (bench/bench_cycle.py): brokers on three
racks, topics of a realistic mix of sizes at RF 3 placed across the racks, one dead broker, a
few reassignments in flight, and what its agents and the Spark job would have published; or,
quiet, the same fleet with every broker alive and nothing moving.
Deterministic for a scale: the fake Admin port (bench/fake_admin_port.py) and the benchmark
build the same fleet in two processes."""

from __future__ import annotations

import random
from dataclasses import dataclass

FULL_BROKERS = 270
FULL_PARTITIONS = 433_000
RACKS = ("/r1", "/r2", "/r3")
# Partitions per topic, and how often each size occurs: many small topics, a few big ones.
TOPIC_SIZES = ((6, 40), (12, 30), (48, 20), (120, 8), (480, 2))
REASSIGNING = 8
MB = 1_000_000


@dataclass(frozen=True)
class Part:
    topic: str
    number: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    size: int


@dataclass(frozen=True)
class Fleet:
    brokers: tuple[int, ...]
    rack: dict[int, str]
    dead: int | None
    parts: tuple[Part, ...]
    reassigning: tuple[Part, ...]  # adding the last live broker of their rack

    @property
    def live(self) -> tuple[int, ...]:
        return tuple(b for b in self.brokers if b != self.dead)


def fleet(
    scale: float,
    seed: int = 29,
    broker_count: int | None = None,
    *,
    quiet: bool = False,
    moving: bool = True,
) -> Fleet:
    """``scale`` x (270 brokers, 433,000 partitions); the brokers are at least 9, or
    ``broker_count`` (rounded down to a multiple of 3) with the same partitions. ``quiet``:
    no broker dead, no reassignment; not ``moving``: the broker dead, no reassignment (a
    heal's first cycle, nobody else moving replicas)."""
    rng = random.Random(seed)
    count = max(9, broker_count if broker_count is not None else round(FULL_BROKERS * scale))
    count -= count % 3
    brokers = tuple(range(1, count + 1))
    rack = {b: RACKS[(b - 1) % 3] for b in brokers}
    by_rack = [[b for b in brokers if rack[b] == r] for r in RACKS]
    dead = None if quiet else by_rack[0][len(by_rack[0]) // 2]
    target = round(FULL_PARTITIONS * scale)
    sizes = [n for n, weight in TOPIC_SIZES for _ in range(weight)]
    parts: list[Part] = []
    t = 0
    while len(parts) < target:
        n = min(rng.choice(sizes), target - len(parts))
        name = f"svc-{t:05d}.events"
        t += 1
        for p in range(n):
            k = len(parts)
            replicas = tuple(row[(k * 7 + i * 3) % len(row)] for i, row in enumerate(by_rack))
            replicas = replicas[k % 3 :] + replicas[: k % 3]  # leaders spread over the racks
            isr = tuple(b for b in replicas if b != dead)
            size = rng.randint(1, 400) * MB
            parts.append(Part(name, p, replicas, isr, isr[0], size))
    every = max(1, len(parts) // REASSIGNING)
    reassigning = () if quiet or not moving else tuple(p for p in parts[::every][:REASSIGNING])
    return Fleet(brokers, rack, dead, tuple(parts), reassigning)
