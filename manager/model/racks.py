"""Rack names and the placement policy's view of the topology (BookKeeper-style policies).

- ``rack``: a partition's replicas on distinct racks. Rack names ``/rack`` or
  ``/region/rack``; the whole path is the rack.
- ``region``: distinct regions first, distinct racks within a region second. Names must be
  ``/region/rack``.
- ``zone``: distinct zones first, distinct upgrade domains within a zone second. Names must be
  ``/zone/upgrade-domain``; ``min_racks`` counts zones.

A broker without a rack gets BookKeeper's defaults: ``/default-rack`` (rack policy) or
``/default-region/default-rack`` (region and zone policies).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from manager.model.policy import PlacementKind

_SEGMENT = re.compile(r"^[A-Za-z0-9_.\-]+$")
DEFAULT_RACK = "/default-rack"
DEFAULT_REGION_RACK = "/default-region/default-rack"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a broker sits: ``top`` (region/zone, or the rack itself) and ``rack`` (full path)."""

    top: str
    rack: str


def rack_name_problem(name: str, kind: PlacementKind) -> str | None:
    """None if ``name`` is a valid rack name for the policy, else what is wrong with it."""
    if not name.startswith("/"):
        return f"rack name {name!r} must start with '/'"
    segments = name[1:].split("/")
    if not all(_SEGMENT.match(s) for s in segments):
        return (
            f"rack name {name!r} has an empty or invalid segment (allowed: letters, digits, _ . -)"
        )
    if kind == "rack" and len(segments) > 2:
        return f"rack name {name!r} must be '/rack' or '/region/rack'"
    if kind in ("region", "zone") and len(segments) != 2:
        shape = "/region/rack" if kind == "region" else "/zone/upgrade-domain"
        return f"rack name {name!r} must be '{shape}' under the {kind} placement policy"
    return None


def location_of(rack: str | None, kind: PlacementKind) -> Location:
    """The broker's location; ``rack`` must already be valid for ``kind``."""
    if rack is None:
        rack = DEFAULT_RACK if kind == "rack" else DEFAULT_REGION_RACK
    if kind == "rack":
        return Location(top=rack, rack=rack)
    top = rack[1:].split("/", 1)[0]
    return Location(top=top, rack=rack)


def spread(locations: Iterable[Location]) -> tuple[int, int]:
    """(distinct tops, distinct racks): larger is better; compared lexicographically."""
    tops: set[str] = set()
    racks: set[str] = set()
    for loc in locations:
        tops.add(loc.top)
        racks.add(loc.rack)
    return len(tops), len(racks)


def min_rack_units(locations: Iterable[Location], kind: PlacementKind) -> int:
    """How many distinct units count towards ``min_racks``: zones for zone, racks otherwise."""
    if kind == "zone":
        return len({loc.top for loc in locations})
    return len({loc.rack for loc in locations})
