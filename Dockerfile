# multus-ipmgr: one image for every command (init, sidecar, sim).
# The bundle in dist/ runs with node alone, so the runtime image carries no node_modules.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# npm install, not npm ci: the lockfile lacks optional binaries for other platforms (see .ci/run).
RUN npm install --no-audit --no-fund
COPY tsconfig.json biome.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# Debian slim, not distroless: the sidecar watches address changes through `ip -o monitor address`, so the
# runtime needs iproute2 (without it the sidecar falls back to polling every 50 ms; see README, Decisions).
FROM node:20-bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends iproute2 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /src/dist ./dist
COPY examples/world-demo.yaml ./examples/world-demo.yaml
# Reading interfaces, netlink address events, IMDS and EC2 need no capability: run as the image's
# unprivileged `node` user.
USER 1000:1000
ENTRYPOINT ["node", "/app/dist/multus-ipmgr.mjs"]
CMD ["--help"]
