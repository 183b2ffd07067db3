/**
 * Typed calls of every /v1 resource the dashboard uses, grouped by resource. Pages use these
 * through TanStack Query; none builds a URL of its own.
 */
import { api, withQuery } from './client';
import type {
  Bucket,
  ConsumerDetail,
  ConsumerIdentification,
  ConsumerSummary,
  ConsumerUpdate,
  MetricsErrors,
  EventCreate,
  EventMarker,
  IdentificationPreview,
  IdentificationSource,
  List,
  Performance,
  RequestRecord,
  ResponseTimePeriods,
  StreamView,
  ComparisonSummary,
  ThroughputPeriods,
} from './types';
import type {
  Session,
  SignInResult,
  Member,
  InviteResult,
  InviteInfo,
  SetupStatus,
  SigninMethods,
} from './auth-types';

const acct = (accountSid: string) => `/v1/accounts/${encodeURIComponent(accountSid)}`;
const bucketPath = (accountSid: string, bucketSid: string) =>
  `${acct(accountSid)}/buckets/${encodeURIComponent(bucketSid)}`;

export const auth = {
  setupStatus: () => api.get<SetupStatus>('/v1/setup'),
  setup: (body: { name: string; email: string; password: string; accountName?: string }) =>
    api.post<SignInResult>('/v1/setup', body),
  methods: () => api.get<SigninMethods>('/v1/authentication/methods'),
  signIn: (body: { email: string; password: string }) =>
    api.post<SignInResult>('/v1/authentication/signin', body),
  session: () => api.get<Session>('/v1/authentication/session'),
  signOut: () => api.get<{ success: boolean }>('/v1/authentication/signout'),
  switchAccount: (accountSid: string) =>
    api.post<{ accountSid: string; role: string }>('/v1/authentication/account', { accountSid }),
  me: () =>
    api.get<{ sid: string; email: string; accounts: { sid: string; name: string; role: string }[] }>(
      '/v1/authentication/me',
    ),
  invite: (token: string) => api.get<InviteInfo>(`/v1/invites/${encodeURIComponent(token)}`),
  acceptInvite: (token: string, body: { password: string; firstName?: string; lastName?: string }) =>
    api.post<SignInResult>(`/v1/invites/${encodeURIComponent(token)}/accept`, body),
};

export const members = {
  list: (accountSid: string) => api.get<{ hasMore: boolean; users: Member[] }>(`${acct(accountSid)}/users`),
  invite: (
    accountSid: string,
    body: { email: string; role: string; firstName?: string; lastName?: string },
  ) => api.post<InviteResult>(`${acct(accountSid)}/users`, body),
  setRole: (accountSid: string, userSid: string, role: string) =>
    api.put<Member>(`${acct(accountSid)}/users/${userSid}`, { role }),
  remove: (accountSid: string, userSid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${acct(accountSid)}/users/${userSid}`),
};

export const buckets = {
  list: (accountSid: string) =>
    api.get<List<Bucket>>(`${acct(accountSid)}/buckets`, { limit: 100, sort: 'name', order: 'asc' }),
  get: (accountSid: string, bucketSid: string) => api.get<Bucket>(bucketPath(accountSid, bucketSid)),
  create: (accountSid: string, body: { name: string; verifySslCerts?: boolean }) =>
    api.post<Bucket>(`${acct(accountSid)}/buckets`, body),
  update: (accountSid: string, bucketSid: string, body: { name: string; verifySslCerts: boolean }) =>
    api.put<Bucket>(bucketPath(accountSid, bucketSid), body),
  remove: (accountSid: string, bucketSid: string) =>
    api.del<{ sid: string; deleted: boolean }>(bucketPath(accountSid, bucketSid)),
};

/** What every metrics panel passes: the URL's bucket, environment and range. */
export interface MetricsScope {
  bucketSid?: string;
  environmentSid?: string;
  startDate: string;
  endDate: string;
  /** one endpoint template and/or HTTP method (docs/metrics.md) */
  endpoint?: string;
  method?: string;
  /** one consumer id, or the consumers of one group (docs/consumers.md) */
  consumer?: string;
  group?: string;
}

export const metrics = {
  summary: (accountSid: string, scope: MetricsScope) =>
    api.get<ComparisonSummary>(`${acct(accountSid)}/metrics/shapeA/summary`, { ...scope }),
  throughput: (accountSid: string, scope: MetricsScope, interval: string) =>
    api.get<ThroughputPeriods>(`${acct(accountSid)}/metrics/shapeA/throughput`, {
      ...scope,
      interval,
      averageUnits: 'rpm',
    }),
  responseTime: (accountSid: string, scope: MetricsScope, interval: string) =>
    api.get<ResponseTimePeriods>(`${acct(accountSid)}/metrics/shapeA/responseTime`, { ...scope, interval }),
  /** `interval` adds each group's requests per interval, `histogram` its duration histogram. */
  performance: (
    accountSid: string,
    scope: MetricsScope,
    groupBy = 'endpoint',
    limit = 500,
    opts: { interval?: string; histogram?: boolean } = {},
  ) =>
    api.get<Performance>(`${acct(accountSid)}/metrics/performance`, {
      ...scope,
      groupBy,
      limit,
      interval: opts.interval,
      histogram: opts.histogram || undefined,
    }),
  errors: (accountSid: string, scope: MetricsScope, limit = 100) =>
    api.get<MetricsErrors>(`${acct(accountSid)}/metrics/errors`, { ...scope, limit }),
};

export interface ConsumerQuery {
  bucketSid?: string;
  environmentSid?: string;
  startDate: string;
  endDate: string;
  sort?: 'requests' | 'errorRate' | 'p95' | 'lastSeen' | 'name';
  order?: 'asc' | 'desc';
  q?: string;
  page?: number;
  limit?: number;
}

const consumerPath = (accountSid: string, id: string) =>
  `${acct(accountSid)}/consumers/${encodeURIComponent(id)}`;

export const consumers = {
  list: (accountSid: string, query: ConsumerQuery) =>
    api.get<List<ConsumerSummary>>(`${acct(accountSid)}/consumers`, { ...query }),
  get: (
    accountSid: string,
    id: string,
    scope: Omit<MetricsScope, 'endpoint' | 'method' | 'consumer' | 'group'>,
  ) => api.get<ConsumerDetail>(consumerPath(accountSid, id), { ...scope }),
  update: (accountSid: string, id: string, body: ConsumerUpdate) =>
    api.put<ConsumerDetail>(consumerPath(accountSid, id), body),
  /** A bucket's identification sources, in the order they are tried. */
  identification: (accountSid: string, bucketSid: string) =>
    api.get<ConsumerIdentification>(`${bucketPath(accountSid, bucketSid)}/consumerIdentification`),
  setIdentification: (accountSid: string, bucketSid: string, sources: IdentificationSource[]) =>
    api.put<ConsumerIdentification>(`${bucketPath(accountSid, bucketSid)}/consumerIdentification`, {
      sources,
    }),
  /** What draft sources give one stored request of the bucket; nothing is stored. */
  previewIdentification: (
    accountSid: string,
    bucketSid: string,
    sources: IdentificationSource[],
    requestSid: string,
  ) =>
    api.post<IdentificationPreview>(`${bucketPath(accountSid, bucketSid)}/consumerIdentification/preview`, {
      sources,
      requestSid,
    }),
};

export interface RequestQuery {
  q?: string;
  view?: string;
  endDate?: string;
  startDate?: string;
  limit?: number;
  page?: number;
}

export const requests = {
  list: (accountSid: string, bucketSid: string, query: RequestQuery) =>
    api.get<List<RequestRecord>>(`${bucketPath(accountSid, bucketSid)}/requests`, {
      sort: 'createdAt',
      order: 'desc',
      ...query,
    }),
  get: (accountSid: string, bucketSid: string, sid: string) =>
    api.get<RequestRecord>(`${bucketPath(accountSid, bucketSid)}/requests/${sid}`),
  setNote: (accountSid: string, bucketSid: string, sid: string, note: string | null) =>
    api.put<RequestRecord>(`${bucketPath(accountSid, bucketSid)}/requests/${sid}`, { note }),
  remove: (accountSid: string, bucketSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${bucketPath(accountSid, bucketSid)}/requests/${sid}`),
  /**
   * URL of the live tail (server-sent events), opened with EventSource; `since` is a cursor
   * (`storedAt|sid`) to start after instead of "now".
   */
  liveUrl: (accountSid: string, bucketSid: string, q?: string, since?: string) =>
    withQuery(`${bucketPath(accountSid, bucketSid)}/requests/live`, { q, since }),
};

export const streamViews = {
  list: (accountSid: string, bucketSid: string) =>
    api.get<List<StreamView>>(`${bucketPath(accountSid, bucketSid)}/streamViews`, { limit: 100 }),
  create: (accountSid: string, bucketSid: string, body: { name: string; criteria: string }) =>
    api.post<StreamView>(`${bucketPath(accountSid, bucketSid)}/streamViews`, body),
  update: (accountSid: string, bucketSid: string, sid: string, body: { name?: string; criteria?: string }) =>
    api.put<StreamView>(`${bucketPath(accountSid, bucketSid)}/streamViews/${sid}`, body),
  remove: (accountSid: string, bucketSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${bucketPath(accountSid, bucketSid)}/streamViews/${sid}`),
};

export interface EventQuery {
  bucketSid?: string;
  environmentSid?: string;
  type?: string;
  source?: string;
  startTime?: string;
  endTime?: string;
  limit?: number;
  page?: number;
}

export const events = {
  list: (accountSid: string, query: EventQuery) =>
    api.get<List<EventMarker>>(`${acct(accountSid)}/events`, { ...query }),
  create: (accountSid: string, body: EventCreate) =>
    api.post<EventMarker>(`${acct(accountSid)}/events`, body),
  update: (accountSid: string, sid: string, body: Partial<EventCreate>) =>
    api.put<EventMarker>(`${acct(accountSid)}/events/${sid}`, body),
  remove: (accountSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${acct(accountSid)}/events/${sid}`),
};
