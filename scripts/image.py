#!/usr/bin/env python3
"""`make image`: build the kmedic image with docker when an engine runs, else with podman.

Idempotent, and offline once done:
  1. docker, when `docker info` answers; otherwise podman, installed once from Debian's
     packages (podman, runc, debootstrap) when missing, and run with the project's own
     configs/podman/containers.conf (CONTAINERS_CONF): nothing on the host is reconfigured;
  2. with podman and no registry to pull from, the Dockerfile's base image
     (debian:bookworm-slim) is built once with debootstrap from the Debian mirror this
     machine's apt uses, imported, and tagged with that name; later builds find it in
     podman's store (shared by every clone on the machine);
  3. the image, tagged kmedic:latest and kmedic:<version>; the engine's layer cache makes a
     rebuild after a change of code cost seconds (dependencies are a layer of their own).
``--kafka`` builds the test cluster's node image instead (tests/images/kafka/Dockerfile):
kmedic-kafka:latest and kmedic-kafka:<Kafka version>, from the jars the bootstrap fetched.
The host's local CAs (/usr/local/share/ca-certificates) go to the build as the secret
`extra-ca`, for networks that inspect TLS; the image itself does not keep them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bootstrap import ARTIFACTS, CACHE, ROOT, ensure_debian_tool

BASE = "docker.io/library/debian:bookworm-slim"
IMAGE = "kmedic:latest"
KAFKA_IMAGE = "kmedic-kafka:latest"
# The jar groups of configs/jvm-artifacts.toml a test cluster node runs.
KAFKA_GROUPS = ("kafka", "jmx-exporter", "zookeeper")
CONTAINERS_CONF = ROOT / "configs" / "podman" / "containers.conf"
LOCAL_CAS = Path("/usr/local/share/ca-certificates")


class ImageError(Exception):
    """A step failed; the message says which and what to do."""


def say(msg: str) -> None:
    print(f"image: {msg}", flush=True)


def engine() -> list[str]:
    """The command of a container engine that can build here."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "info"], capture_output=True).returncode == 0:
        return [docker]
    for tool, package in (("podman", "podman"), ("runc", "runc"), ("debootstrap", "debootstrap")):
        ensure_debian_tool(tool, package, "the image build")
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            raise ImageError(f"no docker engine and no {tool}: install Debian's `{package}`")
    os.environ["CONTAINERS_CONF"] = str(CONTAINERS_CONF)
    return ["podman"]


def apt_sources() -> list[Path]:
    return [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]


def apt_mirror(sources: list[Path]) -> str:
    """The Debian mirror of these apt sources (this machine's: never written into the project),
    in the one-line or the deb822 format; the security archive is not a mirror of bookworm."""
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        for pattern in (r"^URIs:\s*(\S+)", r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s"):
            for uri in re.findall(pattern, text, flags=re.MULTILINE):
                if "debian" in uri and "security" not in uri:
                    return str(uri)
    raise ImageError("no Debian mirror found in /etc/apt sources: cannot debootstrap a base")


def ensure_base(cmd: list[str]) -> None:
    if cmd != ["podman"]:
        return  # docker pulls the base image
    if subprocess.run([*cmd, "image", "exists", BASE]).returncode == 0:
        say(f"base image {BASE} present")
        return
    rootfs = CACHE / "image" / "rootfs"
    if not (rootfs / "etc" / "debian_version").exists():
        mirror = apt_mirror(apt_sources())
        say(f"building the base image with debootstrap (bookworm, minbase, from {mirror})")
        shutil.rmtree(rootfs, ignore_errors=True)
        rootfs.mkdir(parents=True)
        run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), mirror], "debootstrap")
        for deb in (rootfs / "var" / "cache" / "apt" / "archives").glob("*.deb"):
            deb.unlink()
    archive = CACHE / "image" / "rootfs.tar"
    run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(archive), "."], "tar of the base")
    run([*cmd, "import", str(archive), BASE], "podman import of the base image")
    archive.unlink()
    say(f"base image {BASE} imported")


def extra_ca(
    cas_dir: Path = LOCAL_CAS, bundle: Path = CACHE / "image" / "extra-ca.pem"
) -> Path | None:
    """The host's local CAs as one PEM bundle, or None when it has none."""
    cas = sorted(cas_dir.glob("*.crt")) if cas_dir.is_dir() else []
    if not cas:
        return None
    bundle.parent.mkdir(parents=True, exist_ok=True)
    bundle.write_text("".join(ca.read_text().rstrip("\n") + "\n" for ca in cas))
    return bundle


def build(cmd: list[str], tags: list[str], context: Path, *extra: str) -> None:
    args = [*cmd, "build", *(a for t in tags for a in ("-t", t)), *extra]
    if cmd == ["podman"]:
        # No registry to pull from; HEALTHCHECK is kept only in the docker format; the build's
        # RUN steps reach the package registries the way the host does.
        args += ["--pull=never", "--format", "docker", "--network", "host"]
    bundle = extra_ca()
    if bundle is not None:
        args += ["--secret", f"id=extra-ca,src={bundle}"]
    say(f"building {tags[0]} with {cmd[0]}")
    before = image_id(cmd, tags[0])
    proc = subprocess.run([*args, str(context)])
    if proc.returncode != 0:
        raise ImageError(f"{' '.join(args[:2])} of {tags[0]} failed (exit {proc.returncode})")
    if before is not None and before != image_id(cmd, tags[0]):
        # The image this build replaced, untagged now: without this every change of code would
        # leave one behind. The layers the new image shares with it stay (the build cache).
        subprocess.run([*cmd, "rmi", before], capture_output=True)
    say(f"built {' and '.join(tags)}")


def image_id(cmd: list[str], tag: str) -> str | None:
    proc = subprocess.run(
        [*cmd, "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True, text=True
    )
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def build_kmedic(cmd: list[str]) -> None:
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    tag = version.group(1) if version else "dev"
    build(cmd, [IMAGE, f"kmedic:{tag}"], ROOT, "--build-arg", f"VERSION={tag}")


def build_kafka(cmd: list[str]) -> None:
    """The node image, from a context holding only the bootstrapped jars of KAFKA_GROUPS."""
    groups = tomllib.loads(ARTIFACTS.read_text())
    kafka = next(a for a in groups["kafka"]["artifacts"] if a.startswith("org.apache.kafka:"))
    context = CACHE / "image" / "kafka-context"
    shutil.rmtree(context, ignore_errors=True)
    for group in KAFKA_GROUPS:
        lib = CACHE / "jvm" / group / "lib"
        jars = sorted(lib.glob("*.jar"))
        if not jars:
            raise ImageError(f"no jars in {lib}: run `make bootstrap` first")
        target = context / "jvm" / group / "lib"
        target.mkdir(parents=True)
        for jar in jars:
            shutil.copy2(jar, target / jar.name)
    dockerfile = ROOT / "tests" / "images" / "kafka" / "Dockerfile"
    tags = [KAFKA_IMAGE, f"kmedic-kafka:{kafka.rsplit(':', 1)[1]}"]
    build(cmd, tags, context, "-f", str(dockerfile))


def run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise ImageError(f"{what} failed\n{tail}")


def main(argv: list[str]) -> int:
    if argv not in ([], ["--kafka"]):
        print(f"usage: image.py [--kafka] (got {' '.join(argv)})", file=sys.stderr)
        return 2
    try:
        cmd = engine()
        ensure_base(cmd)
        (build_kafka if argv else build_kmedic)(cmd)
    except ImageError as exc:
        print(f"make image: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
