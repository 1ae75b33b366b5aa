"""Where kmedic finds the JVM artifacts that `make bootstrap` fetched.

The bootstrap resolves each group of configs/jvm-artifacts.toml into .cache/jvm/<group>/lib of
the source tree. KMEDIC_JVM_DIR points elsewhere (an image that baked the jars in, say).
"""

from __future__ import annotations

import os
from pathlib import Path

from kmedic.errors import KmedicError

SOURCE_ROOT = Path(__file__).resolve().parent.parent
CONFIGS = SOURCE_ROOT / "configs"


def jvm_dir() -> Path:
    return Path(os.environ.get("KMEDIC_JVM_DIR", SOURCE_ROOT / ".cache" / "jvm"))


def jvm_jars(group: str) -> list[Path]:
    """The jars of one artifact group, sorted; a clear error when bootstrap has not run."""
    lib = jvm_dir() / group / "lib"
    jars = sorted(lib.glob("*.jar"))
    if not jars:
        raise KmedicError(
            f"no jars for '{group}' in {lib}: run `make bootstrap` "
            "(or set KMEDIC_JVM_DIR to where the JVM artifacts are)"
        )
    return jars


def config_file(name: str) -> Path:
    path = CONFIGS / name
    if not path.is_file():
        raise KmedicError(f"missing configuration file {path}")
    return path
