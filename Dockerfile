# multus-ipmgr: one image for init, sidecar, bridge, doctor and sim.
# The bundle in dist/ runs with node alone, so the runtime image carries no node_modules.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json biome.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
COPY --from=build /src/dist ./dist
COPY examples/world-demo.yaml ./examples/world-demo.yaml
# Reading interfaces, IMDS and EC2 needs no capability: run as the distroless nonroot user (65532).
USER 65532:65532
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/multus-ipmgr.mjs"]
CMD ["--help"]
