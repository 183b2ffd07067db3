import { queryOptions, useQuery } from '@tanstack/react-query';
import { useAccountSid } from '../lib/session';
import { auth, buckets, events, metrics, type EventQuery, type MetricsScope } from './resources';
import { slos } from './slos';

/**
 * The reads several pages share, each with one query key and one fetch, so that what one page
 * invalidates (`bucketsQuery(accountSid).queryKey`) is the cache entry every other page reads.
 * A page adds its own options by spreading a factory into `useQuery` (`placeholderData`,
 * `refetchInterval`, `enabled`).
 */

/** The account's buckets. */
export const bucketsQuery = (accountSid: string) =>
  queryOptions({ queryKey: ['buckets', accountSid], queryFn: () => buckets.list(accountSid) });

/** The signed-in account's buckets; `enabled: false` holds the read until it is needed. */
export function useBuckets(options: { enabled?: boolean } = {}) {
  return useQuery({ ...bucketsQuery(useAccountSid()), ...options });
}

/** Whether this installation still needs its first account (`GET /v1/setup`). */
export const setupStatusQuery = queryOptions({ queryKey: ['setup'], queryFn: auth.setupStatus });

/** Requests per interval by status class over a scope. */
export const throughputQuery = (accountSid: string, scope: MetricsScope, interval: string) =>
  queryOptions({
    queryKey: ['throughput', accountSid, scope, interval],
    queryFn: () => metrics.throughput(accountSid, scope, interval),
  });

/** Response-time percentiles per interval over a scope. */
export const responseTimeQuery = (accountSid: string, scope: MetricsScope, interval: string) =>
  queryOptions({
    queryKey: ['responseTime', accountSid, scope, interval],
    queryFn: () => metrics.responseTime(accountSid, scope, interval),
  });

/** Event markers matching a query. */
export const eventsQuery = (accountSid: string, query: EventQuery) =>
  queryOptions({ queryKey: ['events', accountSid, query], queryFn: () => events.list(accountSid, query) });

/** The account's SLOs. */
export const slosQuery = (accountSid: string) =>
  queryOptions({ queryKey: ['slos', accountSid], queryFn: () => slos.list(accountSid) });
