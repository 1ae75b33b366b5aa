# kmedic: one image for every role; the role is the first argument.
#   docker run kmedic:latest manager --config /etc/kmedic/manager.yaml
#   docker run kmedic:latest agent --config /etc/kmedic/agent.yaml
#   docker run kmedic:latest stream --config /etc/kmedic/stream.yaml
# Built by `make image` (docker when an engine runs, podman otherwise; docs/operations.md).
# Networks that inspect TLS give their CA as the build secret `extra-ca` (a PEM bundle);
# `make image` passes the host's own local CAs.

# ---- build: Python packages and the JVM artifacts, fetched by the bootstrap the tests use ----
FROM debian:bookworm-slim AS build
RUN --mount=type=secret,id=extra-ca \
    mkdir -p /usr/local/share/ca-certificates \
 && if [ -s /run/secrets/extra-ca ]; then \
      awk '/BEGIN CERTIFICATE/ { n++ } n { print > ("/usr/local/share/ca-certificates/extra-" n ".crt") }' \
        /run/secrets/extra-ca; \
    fi \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv maven openjdk-17-jdk-headless ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# pip trusts the system's bundle (with the extra CA, if any) rather than its own copy.
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /opt/kmedic
# Only the dependencies, from the one source of truth for versions (pyproject.toml and
# configs/jvm-artifacts.toml): this stage is rebuilt only when one of those changes (not the
# README, which most changes touch: a rebuild of this stage costs minutes).
COPY pyproject.toml ./
COPY scripts/bootstrap.py scripts/bootstrap.py
COPY configs/jvm-artifacts.toml configs/jvm-artifacts.toml
RUN python3 scripts/bootstrap.py --runtime && rm -rf .cache/m2 .cache/maven-settings.xml
# The streaming job's JVM function, compiled against the pyspark installed above.
COPY streaming/jvm streaming/jvm
RUN python3 scripts/bootstrap.py --spark-functions

# ---- runtime: Python and a JRE (the Spark job), the dependencies, the code; no build tools ----
FROM debian:bookworm-slim
ARG VERSION=dev
LABEL org.opencontainers.image.title="kmedic" \
      org.opencontainers.image.description="Self-healing daemon for Apache Kafka: agent, stream and manager roles" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="docs/operations.md"
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system kmedic \
 && useradd --system --gid kmedic --home-dir /var/lib/kmedic --create-home kmedic
WORKDIR /opt/kmedic
COPY --from=build /opt/kmedic/.venv .venv
COPY --from=build /opt/kmedic/.cache/jvm .cache/jvm
# The code last, installed offline over the dependencies: a change of code rebuilds from here.
COPY pyproject.toml README.md ./
COPY configs configs
COPY kmedic kmedic
COPY agent agent
COPY streaming streaming
COPY manager manager
COPY composition composition
RUN .venv/bin/pip install -q --no-deps --no-build-isolation --no-index --no-compile -e . \
 && python3 -m compileall -q kmedic agent streaming manager composition
ENV PATH="/opt/kmedic/.venv/bin:${PATH}" PYTHONUNBUFFERED=1
USER kmedic
WORKDIR /var/lib/kmedic
# /metrics (agent 9464, stream 9465), /metrics + /healthz + /status (manager 9309).
EXPOSE 9464 9465 9309
# Asks the running role's own endpoint (the port from its config): kmedic healthcheck.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["/opt/kmedic/.venv/bin/kmedic", "healthcheck"]
ENTRYPOINT ["/opt/kmedic/.venv/bin/kmedic"]
CMD ["--help"]
