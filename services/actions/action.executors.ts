import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { ActionType, WorkflowAction } from '../../schemas/workflow.schema.js';
import type { Config } from '../shared/config.js';
import { ActionError } from './action.errors.js';
import { checkStatus, sendHttp } from './http.sender.js';
import type { MailSender } from './mail.sender.js';
import type { OutboundGuard } from './outbound-guard.js';
import { renderDeep, type TemplateVars } from './template.renderer.js';

/**
 * One stored action of a workflow row (`actions` jsonb) as the runner reads it: with its position
 * in the stored array, and `type` as stored (a type without an executor fails when run).
 */
export interface RunnableAction extends Pick<WorkflowAction, 'config' | 'order'> {
  index: number;
  type: string;
}

export interface ActionDeps {
  guard: OutboundGuard;
  mail: MailSender;
  /** the dashboard's base URL, for the links of the native alert channels */
  dashboardUrl: string;
}

/** The dashboard's base URL: `PUBLIC_URL` when set, else the API listener's own address. */
export function dashboardBaseUrl(cfg: Pick<Config, 'publicUrl' | 'host' | 'port'>): string {
  return (cfg.publicUrl ?? `http://${cfg.host}:${cfg.port}`).replace(/\/+$/, '');
}

export interface ActionRun {
  job: ActionJob;
  workflow: { sid: string; name: string };
  vars: TemplateVars;
  signal: AbortSignal;
}

/** What a succeeded action reports into the execution record. */
export interface ActionSuccess {
  statusCode?: number;
  messageId?: string;
}

type Executor = (config: Record<string, unknown>, run: ActionRun, deps: ActionDeps) => Promise<ActionSuccess>;

const EXECUTORS: Record<ActionType, Executor> = {
  webhook: async (config, run, deps) => {
    const url = requireString(config, 'url', 'webhook');
    const method = (optString(config, 'method') ?? 'POST').toUpperCase();
    if (!/^[A-Z]{1,16}$/.test(method)) throw new ActionError(`webhook method ${method} is not valid`, false);
    const headers = stringHeaders(config.headers);
    let body: string | undefined;
    if (method !== 'GET' && method !== 'HEAD') {
      const b = config.body === undefined ? defaultPayload(run) : config.body;
      body = typeof b === 'string' ? b : JSON.stringify(b);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
        headers['content-type'] = 'application/json';
      }
    }
    return postLike(deps, run, { url, method, headers, body });
  },

  chat: async (config, run, deps) => {
    const url = requireString(config, 'webhook_url', 'chat');
    const payload: Record<string, string> = {};
    const channel = optString(config, 'channel');
    if (channel !== undefined) payload.channel = channel;
    payload.text = optString(config, 'message') ?? run.job.trigger.message;
    const username = optString(config, 'username');
    if (username !== undefined) payload.username = username;
    return postLike(deps, run, {
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
  },

  automation: async (config, run, deps) => {
    const url = requireString(config, 'webhook_url', 'automation');
    const flowId = config.flow_id;
    if (typeof flowId !== 'string' && typeof flowId !== 'number') {
      throw new ActionError('automation config.flow_id is required', false);
    }
    const data = config.data === undefined ? {} : config.data;
    return postLike(deps, run, {
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ flow_id: flowId, data }),
    });
  },

  email: async (config, run, deps) => {
    const to = (
      Array.isArray(config.to) ? config.to : typeof config.to === 'string' ? config.to.split(',') : []
    )
      .filter((t): t is string => typeof t === 'string')
      .map((t) => t.trim())
      .filter(Boolean);
    if (to.length === 0) throw new ActionError('email config.to needs at least one address', false);
    const subject = optString(config, 'subject') ?? run.job.trigger.message;
    const text = optString(config, 'body') ?? run.job.trigger.message;
    const sent = await deps.mail.send({ to, subject, text }, run.signal);
    return { messageId: sent.messageId };
  },

  slack: async (config, run, deps) => {
    const url = requireString(config, 'webhook_url', 'slack');
    const alert = describeAlert(config, run, deps);
    const blocks: unknown[] = [
      { type: 'header', text: { type: 'plain_text', text: cut(alert.title, 150), emoji: true } },
      { type: 'section', text: { type: 'mrkdwn', text: cut(slackEscape(alert.summary), 3000) } },
      {
        type: 'section',
        fields: alert.facts.slice(0, 10).map((f) => ({
          type: 'mrkdwn',
          text: cut(`*${slackEscape(f.title)}*\n${slackEscape(f.value)}`, 2000),
        })),
      },
      {
        type: 'actions',
        elements: [
          { type: 'button', text: { type: 'plain_text', text: 'Open in Tapline' }, url: alert.link },
        ],
      },
    ];
    const body = { text: cut(`${alert.title}: ${alert.summary}`, 3000), blocks };
    return postJson(deps, run, url, {}, body);
  },

  teams: async (config, run, deps) => {
    const url = requireString(config, 'webhook_url', 'teams');
    const alert = describeAlert(config, run, deps);
    const card = {
      $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
      type: 'AdaptiveCard',
      version: '1.4',
      body: [
        {
          type: 'TextBlock',
          size: 'Large',
          weight: 'Bolder',
          wrap: true,
          color: alert.status === 'resolved' ? 'Good' : 'Attention',
          text: alert.title,
        },
        { type: 'TextBlock', wrap: true, text: alert.summary },
        { type: 'FactSet', facts: alert.facts.map((f) => ({ title: f.title, value: f.value })) },
      ],
      actions: [{ type: 'Action.OpenUrl', title: 'Open in Tapline', url: alert.link }],
    };
    const body = {
      type: 'message',
      attachments: [
        { contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card },
      ],
    };
    return postJson(deps, run, url, {}, body);
  },

  pagerduty: async (config, run, deps) => {
    const routingKey = requireString(config, 'routing_key', 'pagerduty');
    const url = optString(config, 'url')?.trim() || DEFAULT_URLS.pagerduty;
    const alert = describeAlert(config, run, deps);
    const body =
      alert.status === 'resolved'
        ? { routing_key: routingKey, event_action: 'resolve', dedup_key: alert.key }
        : {
            routing_key: routingKey,
            event_action: 'trigger',
            dedup_key: alert.key,
            payload: {
              summary: cut(`${run.workflow.name}: ${alert.summary}`, 1024),
              source: `tapline/${run.job.context.bucket.name}`,
              severity: optString(config, 'severity') ?? 'error',
              timestamp: run.job.createdAt,
              group: run.job.context.environment.name ?? undefined,
              class: run.job.trigger.type,
              custom_details: Object.fromEntries(alert.facts.map((f) => [f.title, f.value])),
            },
            client: 'Tapline',
            client_url: alert.link,
            links: [{ href: alert.link, text: 'Open in Tapline' }],
          };
    return postJson(deps, run, url, {}, body);
  },

  opsgenie: async (config, run, deps) => {
    const apiKey = requireString(config, 'api_key', 'opsgenie');
    const base = (optString(config, 'url')?.trim() || DEFAULT_URLS.opsgenie).replace(/\/+$/, '');
    const alert = describeAlert(config, run, deps);
    const auth = { authorization: `GenieKey ${apiKey}` };
    if (alert.status === 'resolved') {
      const closeUrl = `${base}/v2/alerts/${encodeURIComponent(alert.key)}/close?identifierType=alias`;
      return postJson(deps, run, closeUrl, auth, { source: 'Tapline', note: cut(alert.summary, 25_000) });
    }
    const body = {
      message: cut(`${run.workflow.name}: ${alert.summary}`, 130),
      alias: alert.key,
      description: cut(`${alert.summary}\n\n${alert.link}`, 15_000),
      details: { ...Object.fromEntries(alert.facts.map((f) => [f.title, f.value])), Link: alert.link },
      entity: run.job.context.bucket.name,
      source: 'Tapline',
      priority: optString(config, 'priority') ?? 'P3',
      tags: ['tapline', run.job.trigger.type],
    };
    return postJson(deps, run, `${base}/v2/alerts`, auth, body);
  },
};

/** Where the PagerDuty and Opsgenie actions send without a `url` of their own. */
export const DEFAULT_URLS = {
  pagerduty: 'https://events.pagerduty.com/v2/enqueue',
  opsgenie: 'https://api.opsgenie.com',
} as const;

/** What the native alert channels say about one job. */
interface Alert {
  /** `firing`/`resolved` for threshold and slo_burn triggers; `triggered` for the others (they never resolve) */
  status: 'firing' | 'resolved' | 'triggered';
  /** `Firing: <workflow name>`, `Resolved: …`, `Triggered: …` */
  title: string;
  /** `config.message`, default the trigger's message */
  summary: string;
  /** the figures: metric value, threshold and window, or the request's method, path, status, duration */
  facts: { title: string; value: string }[];
  /** the request's page for request/error triggers, else the workflow's executions page */
  link: string;
  /** PagerDuty dedup key and Opsgenie alias: one per threshold or slo_burn workflow, else one per execution */
  key: string;
}

function describeAlert(config: Record<string, unknown>, run: ActionRun, deps: ActionDeps): Alert {
  const { job, workflow } = run;
  const c = job.context;
  // Threshold and slo_burn alerts open and resolve; the other triggers only happen.
  const opens = job.trigger.type === 'threshold' || job.trigger.type === 'slo_burn';
  const status = opens ? (job.trigger.status ?? 'firing') : 'triggered';
  const facts: { title: string; value: string }[] = [];
  const add = (title: string, value: unknown) => {
    if (value !== null && value !== undefined && value !== '') facts.push({ title, value: String(value) });
  };
  if (c.metric) {
    add('Value', c.metric.value);
    add('Threshold', c.metric.threshold);
    add('Window', c.metric.timeWindow);
  }
  if (c.request.method !== null || c.request.path !== null)
    add('Request', [c.request.method, c.request.path].filter((x) => x !== null).join(' '));
  add('Status', c.response.statusCode);
  if (c.timings.duration !== null) add('Duration', `${c.timings.duration} ms`);
  add('Bucket', c.bucket.name);
  add('Environment', c.environment.name);
  add('Workflow', workflow.name);
  const link =
    job.requestSid !== null
      ? `${deps.dashboardUrl}/requests/${encodeURIComponent(job.bucketSid)}/${encodeURIComponent(job.requestSid)}`
      : `${deps.dashboardUrl}/settings/workflows/${encodeURIComponent(job.bucketSid)}/${encodeURIComponent(job.environmentSid ?? '')}/${encodeURIComponent(job.workflowSid)}/executions`;
  const word = { firing: 'Firing', resolved: 'Resolved', triggered: 'Triggered' }[status];
  return {
    status,
    title: `${word}: ${workflow.name}`,
    summary: optString(config, 'message')?.trim() || job.trigger.message,
    facts,
    link,
    key: opens ? `tapline-${job.workflowSid}` : `tapline-${job.executionSid}`,
  };
}

/** `&`, `<` and `>` are Slack mrkdwn's control characters. */
const slackEscape = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** At most `max` characters (the receivers refuse longer fields), `…` marking a cut. */
const cut = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);

function postJson(
  deps: ActionDeps,
  run: ActionRun,
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<ActionSuccess> {
  return postLike(deps, run, {
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** Runs one action with its config's templates filled. Throws ActionError on failure. */
export async function executeAction(
  action: RunnableAction,
  run: ActionRun,
  deps: ActionDeps,
): Promise<ActionSuccess> {
  const exec = EXECUTORS[action.type as keyof typeof EXECUTORS];
  if (!exec) throw new ActionError(`unknown action type ${JSON.stringify(action.type)}`, false);
  const config = renderDeep(decodeUrlTemplates(action.config), run.vars);
  return exec(config, run, deps);
}

/**
 * A URL that must pass `format: uri` validation cannot hold `{` or `}`: templates in `url` and
 * `webhook_url` may be written percent-encoded (`%7B%7Bbucket.sid%7D%7D`) and are decoded here.
 */
function decodeUrlTemplates(config: Record<string, unknown>): Record<string, unknown> {
  const out = { ...config };
  for (const key of ['url', 'webhook_url']) {
    const v = out[key];
    if (typeof v === 'string') out[key] = v.replace(/%7B%7B/gi, '{{').replace(/%7D%7D/gi, '}}');
  }
  return out;
}

async function postLike(
  deps: ActionDeps,
  run: ActionRun,
  call: { url: string; method: string; headers: Record<string, string>; body: string | undefined },
): Promise<ActionSuccess> {
  // A stable id per execution lets receivers drop the duplicates that at-least-once delivery allows.
  const headers = { ...call.headers, 'x-tapline-execution': run.job.executionSid };
  const out = await sendHttp({ ...call, headers }, deps.guard, run.signal);
  checkStatus(out);
  return { statusCode: out.statusCode };
}

/** The body of a webhook without a configured `body`. */
function defaultPayload(run: ActionRun): unknown {
  const { job, workflow } = run;
  return {
    workflow,
    executionSid: job.executionSid,
    trigger: job.trigger,
    requestSid: job.requestSid,
    createdAt: job.createdAt,
    context: job.context,
  };
}

function requireString(config: Record<string, unknown>, key: string, type: string): string {
  const v = config[key];
  if (typeof v !== 'string' || v.trim() === '')
    throw new ActionError(`${type} config.${key} is required`, false);
  return v.trim();
}

function optString(config: Record<string, unknown>, key: string): string | undefined {
  const v = config[key];
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function stringHeaders(h: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (h === null || typeof h !== 'object' || Array.isArray(h)) return out;
  for (const [k, v] of Object.entries(h as Record<string, unknown>)) {
    if (v === undefined || v === null) continue;
    out[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  return out;
}

/** Parses the `actions` jsonb of a workflow row into runnable actions sorted by `order` (stable). */
export function parseActions(raw: unknown): RunnableAction[] {
  const list = Array.isArray(raw) ? raw : [];
  return list
    .map((a: unknown, index): RunnableAction => {
      const o = (a !== null && typeof a === 'object' ? a : {}) as Record<string, unknown>;
      const order = typeof o.order === 'number' && Number.isFinite(o.order) ? o.order : 0;
      const config =
        o.config !== null && typeof o.config === 'object' ? (o.config as Record<string, unknown>) : {};
      return { index, type: String(o.type ?? ''), order, config };
    })
    .sort((a, b) => a.order - b.order || a.index - b.index);
}
