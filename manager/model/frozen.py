"""The base of kmedic's snapshot models: frozen, unknown fields rejected, no NaN or infinity."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
