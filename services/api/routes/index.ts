import type { FastifyPluginAsync } from 'fastify';
import authenticationRoutes from './authentication.route.js';
import bucketsRoutes from './buckets.route.js';
import requestsRoutes from './requests.route.js';

/**
 * Every route plugin of the API, registered in this order by app.ts. Adding a route file = one
 * import and one line here.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const ROUTES: { plugin: FastifyPluginAsync<any>; opts?: Record<string, unknown> }[] = [
  { plugin: authenticationRoutes },
  { plugin: bucketsRoutes },
  { plugin: requestsRoutes },
];
