import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { ActionType, WorkflowAction } from '../../schemas/workflow.schema.js';
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
};

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
