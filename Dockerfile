# syntax=docker/dockerfile:1

# ---- build: every dependency, compile TypeScript, then drop the development dependencies ----
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci, as in the Makefile: exactly the lock file's versions, which include the native packages of
# every supported platform (amd64 and arm64, glibc and musl), so the image builds on any of them.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY generated ./generated
COPY migrations ./migrations
COPY src ./src
COPY console ./console
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: production dependencies, the build and the contract; runs as the node user ----
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/app/data
WORKDIR /app
# The code stays owned by root, so the service cannot change it; only the embedded database's
# folder is the node user's (mount a volume there, or set DATABASE_URL).
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/api ./api
COPY --from=build /app/console/dist ./console/dist
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8000
# Slim images have no curl; node's fetch asks the liveness endpoint.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8000) + '/health/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/server.js"]
