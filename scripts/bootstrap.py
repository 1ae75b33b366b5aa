#!/usr/bin/env python3
"""Bootstrap everything kmedic needs on this machine, idempotently.

Runs with the system Python (stdlib only) before the virtualenv exists. Each step writes a stamp
holding the hash of its inputs; a step whose stamp matches is skipped, so a second run takes
seconds and touches no network.

Steps:
  1. check Java >= 17 and Maven are installed;
  2. a virtualenv in .venv with the package installed (editable, with the dev extra);
  3. every JVM artifact group of configs/jvm-artifacts.toml resolved through Maven into
     .cache/jvm/<group>/lib (Maven's own repository under .cache/m2);
  4. the streaming job's JVM stateful function (streaming/jvm, Java) compiled against
     pyspark's own jars into .cache/jvm/kmedic-spark/lib/kmedic-spark.jar (no network);
  5. the class-sharing archive of the local cluster's Kafka nodes (kmedic/localcluster/
     class_sharing.py: their JVMs' start-up halved), built by starting a small cluster once
     (about a minute; no network), and the local Spark driver's (the same file; recorded from
     a small local job by streaming/class_sharing_build.py, about two minutes); a failed
     build is warned about and tried again by the next bootstrap;
  6. programs from Debian's packages (DEBIAN_TOOLS): promtool for the alert-rule tests,
     chromium for the status page's browser test, podman, runc and debootstrap for the
     container image tests; each installed when not on PATH; a failed attempt is warned
     about and tried again by the next bootstrap (never remembered as failed).

``--runtime`` (the container image's build stage): what the roles need to run and nothing the
tests need: the dependencies of pyproject.toml without the dev extra (kmedic itself is installed
by the caller once its sources are copied) and the JVM groups marked ``runtime = true``.
``--spark-functions``: step 4 alone (the image's build stage runs it after copying the Java
sources, so a change of them does not fetch the dependencies again).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
VENV = ROOT / ".venv"
ARTIFACTS = ROOT / "configs" / "jvm-artifacts.toml"
SPARK_FUNCTIONS_SRC = ROOT / "streaming" / "jvm" / "src"
SPARK_FUNCTIONS_JAR = CACHE / "jvm" / "kmedic-spark" / "lib" / "kmedic-spark.jar"


class BootstrapError(Exception):
    """A prerequisite is missing or a download failed; the message says which."""


def say(msg: str) -> None:
    print(f"bootstrap: {msg}", flush=True)


def digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()


def stamp_matches(stamp: Path, value: str) -> bool:
    return stamp.exists() and stamp.read_text().strip() == value


def check_java() -> None:
    java = shutil.which("java")
    if java is None:
        raise BootstrapError("Java is missing: install a JDK 17 or newer (java not on PATH)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', out)
    if match is None or int(match.group(1)) < 17:
        raise BootstrapError(f"Java 17 or newer is required, found: {out.splitlines()[:1]}")


def check_maven() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BootstrapError("Maven is missing: install Maven 3 (mvn not on PATH)")
    return mvn


def ensure_venv() -> None:
    """The virtualenv with kmedic installed editable, with the dev extra."""
    pyproject = (ROOT / "pyproject.toml").read_bytes()
    stamp = CACHE / "stamps" / "venv"
    value = digest(pyproject, sys.version.encode())
    python = VENV / "bin" / "python"
    if python.exists() and stamp_matches(stamp, value):
        say("virtualenv up to date")
        return
    create_venv()
    say("installing kafka-medic and its dependencies into the virtualenv")
    run(
        [str(python), "-m", "pip", "install", "-q", "-e", f"{ROOT}[dev]"],
        "pip install of kafka-medic (is the Python package registry reachable?)",
    )
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(value + "\n")


def ensure_runtime_dependencies() -> None:
    """The virtualenv with the roles' dependencies and the build backend, but not kmedic itself:
    the image's build stage installs it after copying the sources (offline, ``--no-deps``), so
    a change of code does not fetch the dependencies again."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    backend = project["build-system"]["requires"]
    create_venv()
    say("installing the roles' dependencies into the virtualenv")
    run(
        [
            str(VENV / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            *project["project"]["dependencies"],
            *backend,
        ],
        "pip install of kmedic's dependencies (is the Python package registry reachable?)",
    )


def create_venv() -> None:
    python = VENV / "bin" / "python"
    if not python.exists():
        say(f"creating virtualenv in {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], "pip upgrade")


def pom_for(group: str, spec: dict[str, object]) -> str:
    deps = []
    excluded = [str(e) for e in spec.get("exclude", [])]  # type: ignore[attr-defined]
    for coord in spec["artifacts"]:  # type: ignore[attr-defined]
        g, a, v = str(coord).split(":")
        exclusions = "".join(
            "<exclusion><groupId>{}</groupId><artifactId>{}</artifactId></exclusion>".format(
                *map(escape, e.split(":"))
            )
            for e in excluded
        )
        deps.append(
            f"<dependency><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId>"
            f"<version>{escape(v)}</version><exclusions>{exclusions}</exclusions></dependency>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">'
        "<modelVersion>4.0.0</modelVersion>"
        f"<groupId>kmedic.bootstrap</groupId><artifactId>{escape(group)}</artifactId>"
        "<version>0</version><packaging>pom</packaging>"
        f"<dependencies>{''.join(deps)}</dependencies></project>\n"
    )


def central_url(mvn: str) -> str:
    """Maven Central's address as this Maven installation's super POM spells it.

    Some POMs (Spark's) declare extra repositories that are unreachable here; a mirror of every
    repository but central onto central keeps resolution inside Maven Central.
    """
    lib = Path(mvn).resolve().parent.parent / "lib"
    for jar in lib.glob("maven-model-builder*.jar"):
        with zipfile.ZipFile(jar) as zf:
            text = zf.read("org/apache/maven/model/pom-4.0.0.xml").decode()
        match = re.search(r"<id>central</id>.*?<url>([^<]+)</url>", text, re.S)
        if match:
            return match.group(1).strip()
    raise BootstrapError(f"cannot find Maven Central's address in {lib}/maven-model-builder*.jar")


def maven_settings(mvn: str) -> Path:
    settings = CACHE / "maven-settings.xml"
    url = escape(central_url(mvn))
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0"><mirrors><mirror>'
        "<id>central-only</id><mirrorOf>*,!central</mirrorOf>"
        f"<url>{url}</url></mirror></mirrors></settings>\n"
    )
    return settings


def ensure_jvm_group(mvn: str, group: str, spec: dict[str, object]) -> None:
    pom = pom_for(group, spec)
    transitive = bool(spec.get("transitive", True))
    value = digest(pom.encode(), str(transitive).encode())
    home = CACHE / "jvm" / group
    lib = home / "lib"
    stamp = home / "stamp"
    if lib.is_dir() and stamp_matches(stamp, value):
        say(f"{group}: up to date ({len(list(lib.glob('*.jar')))} jars)")
        return
    say(f"{group}: resolving {', '.join(map(str, spec['artifacts']))}")  # type: ignore[call-overload]
    if lib.exists():
        shutil.rmtree(lib)
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(pom)
    cmd = [
        mvn,
        "-B",
        "-q",
        "-s",
        str(maven_settings(mvn)),
        f"-Dmaven.repo.local={CACHE / 'm2'}",
        "-f",
        str(home / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={lib}",
        "-DincludeScope=runtime",
    ]
    if not transitive:
        cmd.append("-DexcludeTransitive=true")
    run(cmd, f"Maven could not fetch the {group} artifacts (is Maven Central reachable?)")
    stamp.write_text(value + "\n")
    say(f"{group}: {len(list(lib.glob('*.jar')))} jars in {lib}")


def pyspark_jars() -> Path:
    found = sorted(VENV.glob("lib/python*/site-packages/pyspark/jars"))
    if not found:
        raise BootstrapError(f"pyspark is not installed in {VENV}: its jars are needed to compile")
    return found[-1]


def ensure_spark_functions() -> None:
    """Compile streaming/jvm against the pinned pyspark's jars into one jar (stdlib zip)."""
    javac = shutil.which("javac")
    if javac is None:
        raise BootstrapError("javac is missing: install a JDK 17 (not only a JRE)")
    sources = sorted(SPARK_FUNCTIONS_SRC.rglob("*.java"))
    jars = pyspark_jars()
    value = digest(
        *[p.read_bytes() for p in sources],
        "\n".join(sorted(j.name for j in jars.glob("*.jar"))).encode(),
    )
    stamp = SPARK_FUNCTIONS_JAR.parent.parent / "stamp"
    if SPARK_FUNCTIONS_JAR.exists() and stamp_matches(stamp, value):
        say("kmedic-spark: up to date")
        return
    classes = SPARK_FUNCTIONS_JAR.parent.parent / "classes"
    if classes.exists():
        shutil.rmtree(classes)
    classes.mkdir(parents=True)
    run(
        [javac, "--release", "17", "-d", str(classes), "-cp", f"{jars}/*", *map(str, sources)],
        "javac could not compile streaming/jvm",
    )
    SPARK_FUNCTIONS_JAR.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(SPARK_FUNCTIONS_JAR, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: kmedic\n\n")
        for path in sorted(classes.rglob("*.class")):
            jar.write(path, path.relative_to(classes).as_posix())
    shutil.rmtree(classes)
    stamp.write_text(value + "\n")
    say(f"kmedic-spark: {len(sources)} sources compiled into {SPARK_FUNCTIONS_JAR}")


CLASS_SHARING_GROUP = "kafka"  # the newest Kafka line: every local cluster but one test's
CLASS_SHARING_SOURCE = ROOT / "kmedic" / "localcluster" / "class_sharing_build.py"
SPARK_CLASS_SHARING_SOURCE = ROOT / "streaming" / "class_sharing_build.py"


@functools.cache
def java_version() -> bytes:
    return subprocess.run(["java", "-version"], capture_output=True).stderr


def build_archive(what: str, inputs: list[bytes], stamp_name: str, build: list[str]) -> None:
    """Run ``build`` (a class-sharing archive's build, about a minute or two) unless the
    stamp says ``inputs`` are unchanged since the last success; a failure is warned about and
    left for the next bootstrap."""
    value = digest(java_version(), *inputs)
    stamp = CACHE / "stamps" / stamp_name
    if stamp_matches(stamp, value):
        say(f"{what}: up to date")
        return
    say(f"{what}: recording the classes a small run loads (a minute or two)")
    proc = subprocess.run(build, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        say(
            f"could not build the {what}; its JVMs start without it (slower), and the next "
            f"bootstrap tries again.\n{tail}"
        )
        return
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(value + "\n")
    say(f"{what}: built ({proc.stdout.strip()})")


def ensure_class_sharing(groups: dict[str, object]) -> None:
    """The Kafka nodes' class-sharing archive, rebuilt when the JDK, the group's jars or how
    the archive is recorded changed."""
    if CLASS_SHARING_GROUP not in groups:
        return
    lib = CACHE / "jvm" / CLASS_SHARING_GROUP / "lib"
    build_archive(
        "class-sharing archive",
        [
            "\n".join(sorted(j.name for j in lib.glob("*.jar"))).encode(),
            CLASS_SHARING_SOURCE.read_bytes(),
        ],
        f"class-sharing-{CLASS_SHARING_GROUP}",
        [
            str(VENV / "bin" / "python"),
            "-m",
            "kmedic.localcluster.class_sharing_build",
            CLASS_SHARING_GROUP,
        ],
    )


def ensure_spark_class_sharing() -> None:
    """The local Spark driver's class-sharing archive, rebuilt when the JDK, pyspark's jars or
    how the archive is recorded changed."""
    jars = sorted(p.name for p in VENV.glob("lib/python*/site-packages/pyspark/jars/*.jar"))
    if not jars:
        return  # no pyspark: the virtualenv step said why
    build_archive(
        "Spark driver class-sharing archive",
        ["\n".join(jars).encode(), SPARK_CLASS_SHARING_SOURCE.read_bytes()],
        "class-sharing-spark-driver",
        [str(VENV / "bin" / "python"), "-m", "streaming.class_sharing_build"],
    )


# Programs the tests take from Debian's packages: program -> (package, the tests that need it).
DEBIAN_TOOLS = {
    "promtool": ("prometheus", "alert-rule tests"),
    "chromium": ("chromium", "status page browser tests"),
    # The container image tests, where no Docker engine runs (scripts/image.py, docs/image.md).
    "podman": ("podman", "container image tests"),
    "runc": ("runc", "container image tests"),
    "debootstrap": ("debootstrap", "container image tests"),
    # The shaped local cluster (kmedic/localcluster/netns.py, docs/local-cluster.md).
    "ip": ("iproute2", "shaped cluster tests and benchmarks"),
    "tc": ("iproute2", "shaped cluster tests and benchmarks"),
    "iptables": ("iptables", "shaped cluster tests and benchmarks"),
}


def ensure_debian_tool(tool: str, package: str, needed_by: str) -> bool:
    """Installs ``package`` when ``tool`` is not on PATH; True when the tool is there after.
    A failed attempt is warned about and remembered nowhere: the next bootstrap tries again
    (the tests that need the tool skip, saying why - and fail under CI, .ci/run)."""
    if shutil.which(tool):
        say(f"{tool} present")
        return True
    apt = shutil.which("apt-get")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if apt is None or (sudo and shutil.which("sudo") is None):
        say(
            f"{tool} missing and cannot be installed (needs apt-get as root): "
            f"install Debian's `{package}` package; {needed_by} will skip"
        )
        return False
    say(f"installing {tool} (Debian package `{package}`)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (
        [*sudo, apt, "update", "-q"],
        [*sudo, apt, "install", "-y", "-q", "--no-install-recommends", package],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            say(
                f"could not install {tool} ({' '.join(cmd[-2:])} failed); {needed_by} will "
                f"skip, and the next bootstrap tries again. Or install Debian's `{package}` "
                f"package by hand.\n{tail}"
            )
            return False
    say(f"{tool} installed")
    return True


def run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BootstrapError(f"{what}\n--- last output ---\n{tail}")


def main(argv: list[str]) -> int:
    runtime = argv == ["--runtime"]
    functions_only = argv == ["--spark-functions"]
    if argv and not (runtime or functions_only):
        print(
            f"usage: bootstrap.py [--runtime | --spark-functions] (got {' '.join(argv)})",
            file=sys.stderr,
        )
        return 2
    try:
        check_java()
        if functions_only:
            ensure_spark_functions()
            return 0
        mvn = check_maven()
        groups = tomllib.loads(ARTIFACTS.read_text())
        if runtime:
            ensure_runtime_dependencies()
            groups = {name: spec for name, spec in groups.items() if spec.get("runtime")}
        else:
            ensure_venv()
        for group, spec in groups.items():
            ensure_jvm_group(mvn, group, spec)
        if runtime:
            return 0
        ensure_spark_functions()
        ensure_class_sharing(groups)
        ensure_spark_class_sharing()
        for tool, (package, needed_by) in DEBIAN_TOOLS.items():
            ensure_debian_tool(tool, package, needed_by)
    except BootstrapError as exc:
        print(f"bootstrap failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main(sys.argv[1:]))
