# syntax=docker/dockerfile:1
# multus-ipmgr: one image for every command (init, sidecar, sim), for amd64 and arm64 (Graviton) alike.
# Node 24, the active LTS line (supported until April 2028); Node 20 reached its end of life in April 2026.
# dist/ is plain JavaScript that runs with node alone: the runtime image carries no node_modules, and the
# build stage runs on the builder's own platform (no emulation in `docker buildx build --platform
# linux/amd64,linux/arm64`), since its output is the same for every platform.
# The base, pinned by digest so that a rebuild of the same commit starts from the same bytes: the
# multi-platform index of node:24-bookworm-slim (Node 24.18.0) as public repositories cite it. It was not
# pulled here; check it and take a newer one with `docker buildx imagetools inspect node:24-bookworm-slim`
# (docs/image.md, "The base image"). --build-arg NODE_IMAGE=... replaces it for one build.
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
# package.json's postinstall (it gives a root install's files back to a checkout's owner; a no-op here).
COPY scripts/give-back.mjs ./scripts/
# npm ci: exactly the lockfile's versions (it covers every platform), and a stop when package.json and the
# lockfile disagree, instead of an install that resolves again.
# Behind a TLS-inspecting proxy, hand its CA bundle to npm for this step only (nothing of it stays in any
# layer): --secret id=npm_ca,src=/path/to/ca-bundle.pem
RUN --mount=type=secret,id=npm_ca,required=false \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
    && npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.mjs scripts/build-cni-plugin.mjs ./scripts/
COPY scripts/shims ./scripts/shims
COPY scripts/code-cache ./scripts/code-cache
COPY src ./src
# scripts/build.mjs writes linked source maps for development (6 MB beside 1.7 MB of code); the image
# ships the code only. The CLI's entries start with #!/usr/bin/env node: executable, they are commands.
# dist/cli.cjs.cache and dist/bridge.cjs.cache, V8's code caches made here for the builder's node, are remade
# below for the runtime's.
RUN npm run build && find dist -name '*.map' -delete && rm dist/cli.cjs.cache dist/bridge.cjs.cache \
    && chmod 0755 dist/multus-ipmgr.mjs dist/multus-ipmgr.cjs

# V8's code caches of dist/cli.cjs and dist/bridge.cjs, made by the node binary of the runtime stage (the same base image, on the
# target platform: under emulation for another architecture, one run of node, a few seconds). The CLI's is
# written after one training run of `init` against the simulator on 127.0.0.1 inside this stage, so that it
# holds what a start runs. The entrypoint checks each cache at start and starts without it, the normal way,
# when it does not fit (docs/decisions.md: start-up).
FROM ${NODE_IMAGE} AS code-cache
COPY --from=build /src/dist /app/dist
RUN node /app/dist/write-code-cache.cjs

# The chained CNI plugin's host binary (native/cni-plugin/, docs/cni-plugin.md): C, linked static, so that it
# runs on the node with nothing of the image. Compiled on the target platform (under emulation for another
# architecture: one gcc run, seconds) with Debian's gcc, in a stage of its own: the runtime image gets the
# binary, not the compiler. The build stage above has no gcc, and its npm run build skips the plugin.
FROM ${NODE_IMAGE} AS cni-plugin
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY native/cni-plugin/multus-ipmgr-cni.c ./native/cni-plugin/
COPY scripts/build-cni-plugin.mjs ./scripts/
RUN node scripts/build-cni-plugin.mjs

# Debian slim, not distroless: the sidecar watches address changes through `ip -o monitor address`, so the
# runtime needs iproute2 (without it the sidecar falls back to polling every 50 ms; see docs/decisions.md).
FROM ${NODE_IMAGE}
# `multus-ipmgr` on the PATH, for `kubectl exec POD -- multus-ipmgr doctor` and `kubectl debug ... --
# multus-ipmgr ...` (which replace the entrypoint); the link resolves once dist/ is copied below. It is the
# entrypoint's file, so it starts with the code cache too.
RUN apt-get update \
    && apt-get install -y --no-install-recommends iproute2 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s /app/dist/multus-ipmgr.cjs /usr/local/bin/multus-ipmgr
WORKDIR /app
COPY --from=code-cache /app/dist ./dist
COPY examples/world-demo.yaml ./examples/world-demo.yaml
# The CNI plugin and its installer, which the bridge's init container runs as root to put the plugin into
# the node's /opt/cni/bin (docs/cni-plugin.md).
COPY --from=cni-plugin /src/dist/cni/multus-ipmgr ./cni/multus-ipmgr
COPY native/cni-plugin/install.sh ./cni/install.sh
COPY LICENSE ./LICENSE
# Labels last, so that a new version reuses the layers above. VERSION is package.json's (a test keeps the
# default in step); SOURCE_URL is where your copy of the repository lives.
ARG VERSION=0.1.0
ARG SOURCE_URL=""
LABEL org.opencontainers.image.title="multus-ipmgr" \
      org.opencontainers.image.description="Makes Multus (ipvlan) pod addresses reachable inside an Amazon VPC by assigning them to the worker ENIs that carry them" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
# Reading interfaces, netlink address events, IMDS and EC2 need no capability: run as the image's
# unprivileged `node` user (numeric, so that runAsNonRoot can verify it).
USER 1000:1000
# dist/multus-ipmgr.cjs: the CLI from one CommonJS bundle with V8's code cache (`node dist/multus-ipmgr.mjs`
# runs the same CLI, without it).
ENTRYPOINT ["node", "/app/dist/multus-ipmgr.cjs"]
CMD ["--help"]
