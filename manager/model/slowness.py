"""What the snapshot says of slow brokers: each broker's latency figures from its agent, the
score the manager keeps (manager.analyzer.slowness), and the policy behind it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


SlowState = Literal["ok", "slow", "recovering", "returning"]


class BrokerLatency(_Frozen):
    """How long the broker took to answer, from its agent's newest healthy sample."""

    sampled_at_ms: int = Field(ge=0, description="when the agent took the sample")
    probe_p90_ms: float | None = Field(
        default=None, ge=0, description="the agent's probes' 90th percentile round trip"
    )
    produce_local_ms: float | None = Field(
        default=None, ge=0, description="the broker's own mean time on a Produce request"
    )
    log_flush_ms: float | None = Field(
        default=None, ge=0, description="the broker's mean log flush time"
    )


class Slowness(_Frozen):
    """The slow-broker score as the manager keeps it (manager.analyzer.slowness)."""

    state: SlowState = Field(
        description="ok; slow (demoted); recovering (no longer slow, leadership not yet back); "
        "returning (leadership may return)"
    )
    score: float = Field(ge=0, description="rises on each slow sample, decays on each other")
    since_ms: int = Field(ge=0, description="when the state began")
    evidence: str = Field(default="", description="the newest slow sample's figures")
    demotions: int = Field(
        default=0, ge=0, description="demotions started for it since it was found slow"
    )


class SlowBrokerPolicy(_Frozen):
    """When a broker counts as slow, and what is done about it (docs/manager.md, "Slow
    brokers"). A sample is slow when one of its figures is above the floor, above
    ``own_factor`` x the broker's own median and above ``peer_factor`` x its peers' median."""

    own_factor: float = Field(default=3.0, ge=1, description="x the broker's own history")
    peer_factor: float = Field(default=3.0, ge=1, description="x the peers' median")
    floor_ms: float = Field(default=50.0, ge=0, description="never slow below this")
    history_samples: int = Field(
        default=30, ge=1, description="the broker's own history: its last normal samples"
    )
    min_history: int = Field(
        default=5, ge=0, description="until it has this many, peers and the floor judge alone"
    )
    rise: float = Field(default=1.0, gt=0, description="score added by a slow sample")
    decay: float = Field(default=0.5, gt=0, description="score taken off by a normal sample")
    slow_score: float = Field(default=5.0, gt=0, description="slow (demoted) from this score")
    max_score: float = Field(default=10.0, gt=0, description="the score stops rising here")
    recover_ms: int = Field(
        default=300_000,
        ge=0,
        description="leadership returns once the score has been 0 this long",
    )
    warm_up_ms: int = Field(
        default=300_000,
        ge=0,
        description="a broker back from a restart (or a fencing) is not scored on the samples "
        "of its first this-many ms: cold caches and its followers' catch-up are not slowness",
    )
    max_slow_fraction: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="more slow brokers than this share of the live ones (and more than one) "
        "is the cluster, not a broker: nothing is done and KmedicClusterSlow fires",
    )
    max_demotions: int = Field(
        default=3,
        ge=1,
        description="demotions started for one broker in one slow spell; past them it keeps "
        "what it leads (its leadership keeps coming back, or its elections do not take: a "
        "person looks) until it is no longer slow",
    )
    drain: bool = Field(default=False, description="drain a broker slow for drain_after_ms")
    drain_after_ms: int = Field(default=1_800_000, ge=0)
