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

const acct = (a: string) => `/v1/accounts/${encodeURIComponent(a)}`;
const bucketPath = (a: string, b: string) => `${acct(a)}/buckets/${encodeURIComponent(b)}`;

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
  list: (a: string) => api.get<{ hasMore: boolean; users: Member[] }>(`${acct(a)}/users`),
  invite: (a: string, body: { email: string; role: string; firstName?: string; lastName?: string }) =>
    api.post<InviteResult>(`${acct(a)}/users`, body),
  setRole: (a: string, userSid: string, role: string) =>
    api.put<Member>(`${acct(a)}/users/${userSid}`, { role }),
  remove: (a: string, userSid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${acct(a)}/users/${userSid}`),
};

export const buckets = {
  list: (a: string) =>
    api.get<List<Bucket>>(`${acct(a)}/buckets`, { limit: 100, sort: 'name', order: 'asc' }),
  get: (a: string, b: string) => api.get<Bucket>(bucketPath(a, b)),
  create: (a: string, body: { name: string; verifySslCerts?: boolean }) =>
    api.post<Bucket>(`${acct(a)}/buckets`, body),
  update: (a: string, b: string, body: { name: string; verifySslCerts: boolean }) =>
    api.put<Bucket>(bucketPath(a, b), body),
  remove: (a: string, b: string) => api.del<{ sid: string; deleted: boolean }>(bucketPath(a, b)),
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
  summary: (a: string, s: MetricsScope) =>
    api.get<ComparisonSummary>(`${acct(a)}/metrics/shapeA/summary`, { ...s }),
  throughput: (a: string, s: MetricsScope, interval: string) =>
    api.get<ThroughputPeriods>(`${acct(a)}/metrics/shapeA/throughput`, {
      ...s,
      interval,
      averageUnits: 'rpm',
    }),
  responseTime: (a: string, s: MetricsScope, interval: string) =>
    api.get<ResponseTimePeriods>(`${acct(a)}/metrics/shapeA/responseTime`, { ...s, interval }),
  /** `interval` adds each group's requests per interval, `histogram` its duration histogram. */
  performance: (
    a: string,
    s: MetricsScope,
    groupBy = 'endpoint',
    limit = 500,
    opts: { interval?: string; histogram?: boolean } = {},
  ) =>
    api.get<Performance>(`${acct(a)}/metrics/performance`, {
      ...s,
      groupBy,
      limit,
      interval: opts.interval,
      histogram: opts.histogram || undefined,
    }),
  errors: (a: string, s: MetricsScope, limit = 100) =>
    api.get<MetricsErrors>(`${acct(a)}/metrics/errors`, { ...s, limit }),
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

const consumerPath = (a: string, id: string) => `${acct(a)}/consumers/${encodeURIComponent(id)}`;

export const consumers = {
  list: (a: string, query: ConsumerQuery) =>
    api.get<List<ConsumerSummary>>(`${acct(a)}/consumers`, { ...query }),
  get: (a: string, id: string, s: Omit<MetricsScope, 'endpoint' | 'method' | 'consumer' | 'group'>) =>
    api.get<ConsumerDetail>(consumerPath(a, id), { ...s }),
  update: (a: string, id: string, body: ConsumerUpdate) => api.put<ConsumerDetail>(consumerPath(a, id), body),
  /** A bucket's identification sources, in the order they are tried. */
  identification: (a: string, b: string) =>
    api.get<ConsumerIdentification>(`${bucketPath(a, b)}/consumerIdentification`),
  setIdentification: (a: string, b: string, sources: IdentificationSource[]) =>
    api.put<ConsumerIdentification>(`${bucketPath(a, b)}/consumerIdentification`, { sources }),
  /** What draft sources give one stored request of the bucket; nothing is stored. */
  previewIdentification: (a: string, b: string, sources: IdentificationSource[], requestSid: string) =>
    api.post<IdentificationPreview>(`${bucketPath(a, b)}/consumerIdentification/preview`, {
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
  list: (a: string, b: string, query: RequestQuery) =>
    api.get<List<RequestRecord>>(`${bucketPath(a, b)}/requests`, {
      sort: 'createdAt',
      order: 'desc',
      ...query,
    }),
  get: (a: string, b: string, sid: string) => api.get<RequestRecord>(`${bucketPath(a, b)}/requests/${sid}`),
  setNote: (a: string, b: string, sid: string, note: string | null) =>
    api.put<RequestRecord>(`${bucketPath(a, b)}/requests/${sid}`, { note }),
  remove: (a: string, b: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${bucketPath(a, b)}/requests/${sid}`),
  /**
   * URL of the live tail (server-sent events), opened with EventSource; `since` is a cursor
   * (`storedAt|sid`) to start after instead of "now".
   */
  liveUrl: (a: string, b: string, q?: string, since?: string) =>
    withQuery(`${bucketPath(a, b)}/requests/live`, { q, since }),
};

export const streamViews = {
  list: (a: string, b: string) =>
    api.get<List<StreamView>>(`${bucketPath(a, b)}/streamViews`, { limit: 100 }),
  create: (a: string, b: string, body: { name: string; criteria: string }) =>
    api.post<StreamView>(`${bucketPath(a, b)}/streamViews`, body),
  update: (a: string, b: string, sid: string, body: { name?: string; criteria?: string }) =>
    api.put<StreamView>(`${bucketPath(a, b)}/streamViews/${sid}`, body),
  remove: (a: string, b: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${bucketPath(a, b)}/streamViews/${sid}`),
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
  list: (a: string, query: EventQuery) => api.get<List<EventMarker>>(`${acct(a)}/events`, { ...query }),
  create: (a: string, body: EventCreate) => api.post<EventMarker>(`${acct(a)}/events`, body),
  update: (a: string, sid: string, body: Partial<EventCreate>) =>
    api.put<EventMarker>(`${acct(a)}/events/${sid}`, body),
  remove: (a: string, sid: string) => api.del<{ sid: string; deleted: boolean }>(`${acct(a)}/events/${sid}`),
};
