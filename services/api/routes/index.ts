import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import apiTokensRoutes from './api-tokens.route.js';
import authenticationRoutes from './authentication.route.js';
import signinRoutes from './signin.route.js';
import oidcRoutes from './oidc.route.js';
import usersRoutes from './users.route.js';
import mcpTokensRoutes from './mcp-tokens.route.js';
import bucketsRoutes from './buckets.route.js';
import bucketStatsRoutes from './bucket-stats.route.js';
import eventsRoutes from './events.route.js';
import mcpRoutes from '../mcp/mcp.route.js';
import streamViewsRoutes, { streamViewCriteria } from './stream-views.route.js';
import requestsRoutes from './requests.route.js';
import pipelineStatsRoutes from './pipeline-stats.route.js';
import exclusionsRoutes from './exclusions.route.js';
import redactionsRoutes from './redactions.route.js';
import sdkRoutes from './sdk.route.js';
import accountRoutes from './account.route.js';
import rulesPreviewRoutes from './rules-preview.route.js';
import workflowsRoutes from './workflows.route.js';
import alertsRoutes from './alerts.route.js';
import metricsRoutes from './metrics.route.js';
import consumersRoutes from './consumers.route.js';
import endpointTemplatesRoutes from './endpoint-templates.route.js';
import slosRoutes from './slos.route.js';
import releasesRoutes from './releases.route.js';

/**
 * Every route plugin of the API, registered in this order by app.ts. Adding a route file = one
 * import and one line here.
 */
// Options may be a function of the app (Fastify evaluates it at registration), for deps-bound hooks.
export const ROUTES: {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  plugin: FastifyPluginAsync<any>;
  opts?: Record<string, unknown> | ((app: FastifyInstance) => Record<string, unknown>);
}[] = [
  { plugin: authenticationRoutes },
  { plugin: signinRoutes },
  { plugin: oidcRoutes },
  { plugin: usersRoutes },
  { plugin: apiTokensRoutes },
  { plugin: mcpTokensRoutes },
  { plugin: bucketsRoutes },
  { plugin: bucketStatsRoutes },
  { plugin: requestsRoutes, opts: (app) => ({ criteria: streamViewCriteria(app.deps.pg) }) },
  { plugin: eventsRoutes },
  { plugin: streamViewsRoutes },
  { plugin: mcpRoutes },
  { plugin: pipelineStatsRoutes },
  { plugin: exclusionsRoutes },
  { plugin: redactionsRoutes },
  { plugin: sdkRoutes },
  { plugin: accountRoutes },
  { plugin: rulesPreviewRoutes },
  { plugin: workflowsRoutes },
  { plugin: alertsRoutes },
  { plugin: metricsRoutes },
  { plugin: consumersRoutes },
  { plugin: endpointTemplatesRoutes },
  { plugin: slosRoutes },
  { plugin: releasesRoutes },
];
