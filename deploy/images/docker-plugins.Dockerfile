# Docker CLI plugins for the host that builds and runs the stack: Debian bookworm's docker.io has
# Compose v1 only and no buildx (BuildKit); trixie packages both as v2 CLI plugins, which
# scripts/lib/docker-engine.mjs (ensureDockerPlugins) copies out of this image. A file of its own:
# the legacy builder that runs it would build every stage before a target in a shared file.
FROM debian:trixie-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends docker-compose docker-buildx \
 && rm -rf /var/lib/apt/lists/*
