# syntax=docker/dockerfile:1
#
# The production image of agentctl: `agentctl serve`, configured by environment variables
# (docs/settings.md), for Compose (compose.yaml) and Kubernetes (deploy/k8s/). Guide:
# docs/deployment.md.
#
#   docker build -t agentctl:local .
#   docker build -t agentctl:local --build-arg EXTRAS=anthropic,otel .   # fewer packages
#
# EXTRAS chooses the pip extras of agentctl installed (pyproject.toml): `providers` (every
# chat-model provider), `anthropic`, `google`, `aws`, `otel` (OpenTelemetry export), comma
# separated; empty for none (OpenAI only). A deployed revision that needs a package the image
# lacks is refused with the `pip install` line it needs.

ARG PYTHON_IMAGE=python:3.11-slim

# --- build: the agentctl wheel, installed with its extras into a virtualenv ---------------
FROM ${PYTHON_IMAGE} AS build

ARG EXTRAS=providers,otel

WORKDIR /src
RUN python -m venv /opt/venv

# Only what the wheel is made of (.dockerignore lets nothing else in: no .env, no .git).
COPY pyproject.toml README.md ./
COPY src ./src

# Every dependency ships binary wheels for this platform: no compiler needed. The cache mount
# keeps downloads between builds (BuildKit, the default builder of Docker 23 and later).
RUN --mount=type=cache,target=/root/.cache/pip \
    /opt/venv/bin/pip wheel --disable-pip-version-check --no-deps --wheel-dir /wheels . \
    && wheel="$(ls /wheels/agentctl-*.whl)" \
    && /opt/venv/bin/pip install --disable-pip-version-check "${wheel}${EXTRAS:+[$EXTRAS]}" \
    && /opt/venv/bin/agentctl --version

# --- runtime: the virtualenv on a clean base, run by an unprivileged user -----------------
FROM ${PYTHON_IMAGE} AS runtime

ARG EXTRAS=providers,otel
LABEL org.opencontainers.image.title="agentctl" \
      org.opencontainers.image.description="Self-hostable agent server speaking the LangGraph Platform API" \
      org.opencontainers.image.licenses="MIT" \
      io.agentctl.extras="${EXTRAS}"

# bubblewrap isolates the platform sandbox's commands (`agentctl sandbox-server`, or `serve`
# running sandboxes itself); the base image already has util-linux (prlimit, setpriv). tini
# is PID 1: it reaps the processes a finished sandbox leaves to it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap tini \
    && rm -rf /var/lib/apt/lists/*

# A fixed numeric uid/gid, so Kubernetes' runAsNonRoot can check it. Its home is /data: the
# only place (with /tmp) the server writes, so the root filesystem can be read-only.
RUN groupadd --system --gid 10001 agentctl \
    && useradd --system --uid 10001 --gid agentctl --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin agentctl \
    && mkdir /data \
    && chown agentctl:agentctl /data

COPY --from=build /opt/venv /opt/venv

# PATH and PYTHON*: the interpreter's; the rest are agentctl settings (docs/settings.md).
# With DATABASE_URL unset, /data also holds the SQLite database: keep the volume then.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    AGENTCTL_HOST=0.0.0.0 \
    AGENTCTL_PORT=8000 \
    AGENTCTL_DATA_DIR=/data

VOLUME ["/data"]
WORKDIR /data
USER 10001:10001
EXPOSE 8000

# GET /ok answers 200 while the replica is up. Python, because the slim base has no curl;
# urlopen raises (exit 1) on a refused connection, a timeout or a status other than 2xx.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/ok' % os.environ.get('AGENTCTL_PORT', '8000'), timeout=4)"]

# SIGTERM (the default stop signal) drains runs in flight for AGENTCTL_SHUTDOWN_GRACE_SECONDS:
# give the container longer than that to stop (stop_grace_period, terminationGracePeriodSeconds).
ENTRYPOINT ["tini", "--"]
CMD ["agentctl", "serve"]
