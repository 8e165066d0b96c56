# syntax=docker/dockerfile:1
#
# One image for every app. `APP` selects the entry point dist/apps/${APP}/src/main.js:
#   docker build --build-arg APP=dispatch-service -t campaign-ops/dispatch-service .
# or build once and choose at run time: docker run -e APP=dispatch-service campaign-ops
# (api-gateway, dispatch-service, connection-service, webhook-delivery-service, standalone, ops-cli).

ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: compile TypeScript and better-sqlite3, then drop the dev dependencies -----------------
FROM ${NODE_IMAGE} AS build
# better-sqlite3 compiles from source when no prebuilt binary can be fetched.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# The npm that CI and the developers use: it honours package.json's `allowScripts`, so only the
# install scripts the project approved (better-sqlite3) run during `npm ci`.
ARG NPM_VERSION=11.19.1
RUN npm install -g --no-audit --no-fund "npm@${NPM_VERSION}"
# node-gyp takes Node's headers from the image (/usr/local/include/node) instead of downloading them.
ENV NX_NO_CLOUD=true NX_DAEMON=false CI=true npm_config_nodedir=/usr/local
WORKDIR /src
# Dependencies first: this layer is reused until the lock file changes.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.base.json tsconfig.build.json nx.json ./
COPY libs ./libs
COPY apps ./apps
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

# --- runtime: the compiled apps and production dependencies only ---------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# A fixed uid/gid (10001) so Kubernetes can check runAsNonRoot and volumes can be owned by it.
# DATA_DIR is the only place the apps write (the config loader creates it even when EventStoreDB
# and MongoDB are configured); with a read-only root filesystem it is a mounted volume.
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin app \
 && mkdir -p /app/data \
 && chown 10001:10001 /app/data
# Code and dependencies stay owned by root: the app user can read them, not change them.
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
ENV DATA_DIR=/app/data HOST=0.0.0.0
USER 10001:10001

# Declared last so the four app images share every layer above.
ARG APP=api-gateway
ENV APP=${APP}

# The gateway's ports. Each app listens on PORT, by default 3000 (gateway), 3001 (dispatch),
# 3002 (connection), 3003 (webhook-delivery), and serves Prometheus' /metrics on METRICS_PORT, by
# default 9464 (gateway), 9465, 9466, 9467; compose and Kubernetes set both explicitly.
EXPOSE 3000 9464

# Liveness: the process answers HTTP. Uses Node's own fetch, so the image needs no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const d={'dispatch-service':3001,'connection-service':3002,'webhook-delivery-service':3003};fetch('http://127.0.0.1:'+(process.env.PORT||d[process.env.APP]||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# Node is PID 1: NestJS's shutdown hooks handle SIGTERM (stop consumers, drain NATS, close stores)
# and the process exits 0 once its event loop is empty (checked with each app as PID 1 of its own
# PID namespace), so no init process is needed. `exec` replaces the shell, so node gets the signal.
STOPSIGNAL SIGTERM
CMD ["sh", "-c", "exec node \"dist/apps/${APP}/src/main.js\""]
