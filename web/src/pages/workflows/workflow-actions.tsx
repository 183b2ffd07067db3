/**
 * The ordered actions of the workflow editor: webhook, email, chat, automation and the native alert
 * channels (Slack, Microsoft Teams, PagerDuty, Opsgenie) with their fields
 * (docs/workflows.md "Actions"). Text fields accept `{{…}}` template variables; the editor tells
 * its parent which field has the focus so the variable picker can insert into it.
 */
import type { ActionType, WorkflowBody } from '../../api/workflows';

export interface ActionDraft {
  /** stable React key across reorders */
  key: number;
  type: ActionType;
  fields: Record<string, string>;
}

/** A text field that the variable picker may insert into. */
export interface FocusedField {
  el: HTMLInputElement | HTMLTextAreaElement;
  insert: (text: string) => void;
}

interface FieldSpec {
  key: string;
  label: string;
  kind: 'text' | 'textarea' | 'select';
  placeholder?: string;
  hint?: string;
  required?: boolean;
  options?: string[];
}

/**
 * How the API shows secret parts of an action (header values, URL tokens, credential-named body
 * and data values): docs/security.md. A mask is kept only while the action's URL keeps its origin.
 */
const SECRET_MASK = '****';

const FIELDS: Record<ActionType, FieldSpec[]> = {
  webhook: [
    {
      key: 'url',
      label: 'URL',
      kind: 'text',
      required: true,
      placeholder: 'https://hooks.example.com/tapline',
    },
    { key: 'method', label: 'Method', kind: 'select', options: ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'] },
    {
      key: 'headers',
      label: 'Headers (one "Name: value" per line)',
      kind: 'textarea',
      placeholder: 'X-Api-Key: …',
    },
    {
      key: 'body',
      label: 'Body (JSON; empty = the default execution payload)',
      kind: 'textarea',
      placeholder: '{"text": "{{trigger.message}}"}',
    },
  ],
  email: [
    {
      key: 'to',
      label: 'To (comma-separated)',
      kind: 'text',
      required: true,
      placeholder: 'oncall@example.com',
    },
    { key: 'subject', label: 'Subject', kind: 'text', placeholder: '{{trigger.message}}' },
    { key: 'body', label: 'Body (plain text)', kind: 'textarea', placeholder: '{{trigger.message}}' },
  ],
  chat: [
    {
      key: 'webhook_url',
      label: 'Chat webhook URL',
      kind: 'text',
      required: true,
      placeholder: 'https://hooks.slack.com/services/…',
    },
    { key: 'channel', label: 'Channel', kind: 'text', placeholder: '#alerts' },
    { key: 'message', label: 'Message', kind: 'textarea', placeholder: '{{trigger.message}}' },
    { key: 'username', label: 'Username', kind: 'text', placeholder: 'Tapline' },
  ],
  automation: [
    { key: 'flow_id', label: 'Flow id', kind: 'text', required: true, placeholder: 'flow-42' },
    {
      key: 'webhook_url',
      label: 'Automation webhook URL',
      kind: 'text',
      required: true,
      placeholder: 'https://automation.example.com/hooks/…',
    },
    {
      key: 'data',
      label: 'Data (JSON object)',
      kind: 'textarea',
      placeholder: '{"path": "{{request.path}}"}',
    },
  ],
  slack: [
    {
      key: 'webhook_url',
      label: 'Slack incoming webhook URL',
      kind: 'text',
      required: true,
      placeholder: 'https://hooks.slack.com/services/…',
    },
    {
      key: 'message',
      label: 'Summary (default: the trigger message)',
      kind: 'textarea',
      placeholder: '{{trigger.message}}',
    },
  ],
  teams: [
    {
      key: 'webhook_url',
      label: 'Teams workflow webhook URL',
      kind: 'text',
      required: true,
      placeholder: 'https://prod-00.westeurope.logic.azure.com/workflows/…',
    },
    {
      key: 'message',
      label: 'Summary (default: the trigger message)',
      kind: 'textarea',
      placeholder: '{{trigger.message}}',
    },
  ],
  pagerduty: [
    { key: 'routing_key', label: 'Integration key (Events API v2)', kind: 'text', required: true },
    { key: 'severity', label: 'Severity', kind: 'select', options: ['error', 'critical', 'warning', 'info'] },
    {
      key: 'url',
      label: 'Events API URL (empty: https://events.pagerduty.com/v2/enqueue)',
      kind: 'text',
      placeholder: 'https://events.eu.pagerduty.com/v2/enqueue',
    },
  ],
  opsgenie: [
    { key: 'api_key', label: 'API key', kind: 'text', required: true },
    { key: 'priority', label: 'Priority', kind: 'select', options: ['P3', 'P1', 'P2', 'P4', 'P5'] },
    {
      key: 'url',
      label: 'API URL (empty: https://api.opsgenie.com)',
      kind: 'text',
      placeholder: 'https://api.eu.opsgenie.com',
    },
  ],
};

/** The error keys the editor shows beside an action's fields (`actions.<i>.config.<field>`). */
export function actionFieldKeys(list: ActionDraft[]): string[] {
  return list.flatMap((a, i) => FIELDS[a.type].map((spec) => `actions.${i}.config.${spec.key}`));
}

export const ACTION_LABELS: Record<ActionType, string> = {
  webhook: 'Webhook',
  email: 'Email',
  chat: 'Chat message',
  automation: 'Automation',
  slack: 'Slack',
  teams: 'Microsoft Teams',
  pagerduty: 'PagerDuty',
  opsgenie: 'Opsgenie',
};

const URL_KEYS = new Set(['url', 'webhook_url']);
const JSON_KEYS: Record<ActionType, string[]> = {
  webhook: ['body'],
  email: [],
  chat: [],
  automation: ['data'],
  slack: [],
  teams: [],
  pagerduty: [],
  opsgenie: [],
};

/** A URL with `{{…}}` must reach the API percent-encoded (it is a `format: uri` field). */
const encodeTemplates = (u: string) => u.replaceAll('{{', '%7B%7B').replaceAll('}}', '%7D%7D');
const decodeTemplates = (u: string) => u.replace(/%7B%7B/gi, '{{').replace(/%7D%7D/gi, '}}');

export function emptyAction(type: ActionType, key: number): ActionDraft {
  const defaults: Partial<Record<ActionType, Record<string, string>>> = {
    webhook: { method: 'POST' },
    pagerduty: { severity: 'error' },
    opsgenie: { priority: 'P3' },
  };
  return { key, type, fields: { ...defaults[type] } };
}

/** A stored action back into form strings. */
export function actionDraft(
  a: { type: ActionType; config: Record<string, unknown> },
  key: number,
): ActionDraft {
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(a.config)) {
    if (v === undefined || v === null) continue;
    if (k === 'headers' && typeof v === 'object')
      fields[k] = Object.entries(v as Record<string, unknown>)
        .map(([h, hv]) => `${h}: ${String(hv)}`)
        .join('\n');
    else if (k === 'to' && Array.isArray(v)) fields[k] = v.join(', ');
    else if (typeof v === 'object') fields[k] = JSON.stringify(v, null, 2);
    else fields[k] = URL_KEYS.has(k) ? decodeTemplates(String(v)) : String(v);
  }
  return { key, type: a.type, fields };
}

/**
 * The actions as the API takes them, in list order (`order` = position). Returns the client-side
 * problems (invalid JSON, malformed header lines) keyed like the API's field errors instead.
 */
export function actionsBody(list: ActionDraft[]): {
  actions: WorkflowBody['actions'];
  errors: Record<string, string>;
} {
  const errors: Record<string, string> = {};
  const actions = list.map((a, i) => {
    const config: Record<string, unknown> = {};
    for (const spec of FIELDS[a.type]) {
      const raw = (a.fields[spec.key] ?? '').trim();
      if (raw === '') continue;
      const at = `actions.${i}.config.${spec.key}`;
      if (JSON_KEYS[a.type].includes(spec.key)) {
        try {
          const parsed = JSON.parse(raw) as unknown;
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
            errors[at] = 'must be a JSON object';
          else config[spec.key] = parsed;
        } catch {
          errors[at] = 'is not valid JSON';
        }
      } else if (spec.key === 'headers') {
        const h: Record<string, string> = {};
        for (const line of raw.split('\n')) {
          if (!line.trim()) continue;
          const c = line.indexOf(':');
          if (c <= 0) {
            errors[at] = `"${line.trim()}" is not "Name: value"`;
            continue;
          }
          h[line.slice(0, c).trim()] = line.slice(c + 1).trim();
        }
        config.headers = h;
      } else if (spec.key === 'to') {
        config.to = raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
      } else if (spec.key === 'flow_id') {
        config.flow_id = /^\d+$/.test(raw) && raw.length < 16 ? Number(raw) : raw;
      } else config[spec.key] = URL_KEYS.has(spec.key) ? encodeTemplates(raw) : raw;
    }
    return { type: a.type, config, order: i };
  });
  return { actions, errors };
}

export function ActionsEditor({
  value,
  onChange,
  errors,
  onFocusField,
  rendered,
  nextKey,
}: {
  value: ActionDraft[];
  onChange: (next: ActionDraft[]) => void;
  /** API and client field errors keyed `actions.N.config.field` */
  errors: Record<string, string>;
  onFocusField: (f: FocusedField) => void;
  /** each action's config rendered on the sample (same order), when the preview has it */
  rendered?: unknown[];
  nextKey: () => number;
}) {
  const setAt = (i: number, next: ActionDraft) => onChange(value.map((a, j) => (j === i ? next : a)));
  const move = (i: number, d: -1 | 1) => {
    const next = [...value];
    const [x] = next.splice(i, 1);
    next.splice(i + d, 0, x!);
    onChange(next);
  };
  const listErrors = Object.entries(errors).filter(([k]) => k === 'actions');
  return (
    <fieldset className="wf-fieldset">
      <legend>Actions (run in this order)</legend>
      <ol className="wf-actions">
        {value.map((a, i) => {
          const n = i + 1;
          const actionErrors = Object.entries(errors).filter(
            ([k]) => k === `actions.${i}` || k === `actions.${i}.config` || k === `actions.${i}.type`,
          );
          return (
            <li key={a.key} className="wf-action" aria-label={`Action ${n}: ${ACTION_LABELS[a.type]}`}>
              <div className="wf-action-head">
                <label className="wf-inline">
                  <span className="wf-action-n">{n}.</span>
                  <span className="sr-only">Type of action {n}</span>
                  <select
                    value={a.type}
                    onChange={(e) => setAt(i, emptyAction(e.target.value as ActionType, a.key))}
                  >
                    {(Object.keys(ACTION_LABELS) as ActionType[]).map((t) => (
                      <option key={t} value={t}>
                        {ACTION_LABELS[t]}
                      </option>
                    ))}
                  </select>
                </label>
                <div className="row-actions">
                  <button
                    type="button"
                    className="btn btn-small btn-ghost"
                    aria-label={`Move action ${n} up`}
                    disabled={i === 0}
                    onClick={() => move(i, -1)}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    className="btn btn-small btn-ghost"
                    aria-label={`Move action ${n} down`}
                    disabled={i === value.length - 1}
                    onClick={() => move(i, 1)}
                  >
                    ↓
                  </button>
                  <button
                    type="button"
                    className="btn btn-small btn-danger-ghost"
                    aria-label={`Remove action ${n}`}
                    disabled={value.length === 1}
                    onClick={() => onChange(value.filter((_, j) => j !== i))}
                  >
                    Remove
                  </button>
                </div>
              </div>
              <div className="wf-action-fields">
                {FIELDS[a.type].map((spec) => {
                  const id = `wf-a${a.key}-${spec.key}`;
                  const err = errors[`actions.${i}.config.${spec.key}`];
                  const v = a.fields[spec.key] ?? '';
                  const update = (text: string) =>
                    setAt(i, { ...a, fields: { ...a.fields, [spec.key]: text } });
                  const focus = (el: HTMLInputElement | HTMLTextAreaElement) =>
                    onFocusField({ el, insert: (text) => update(text) });
                  const common = {
                    id,
                    value: v,
                    'aria-invalid': err ? true : undefined,
                    'aria-describedby': err ? `${id}-error` : undefined,
                  };
                  return (
                    <div key={spec.key} className={`field${spec.kind === 'textarea' ? ' wf-wide' : ''}`}>
                      <label htmlFor={id}>{spec.label}</label>
                      {spec.kind === 'select' ? (
                        <select {...common} onChange={(e) => update(e.target.value)}>
                          {spec.options!.map((o) => (
                            <option key={o} value={o}>
                              {o}
                            </option>
                          ))}
                        </select>
                      ) : spec.kind === 'textarea' ? (
                        <textarea
                          {...common}
                          rows={3}
                          className="mono"
                          placeholder={spec.placeholder}
                          onFocus={(e) => focus(e.currentTarget)}
                          onChange={(e) => update(e.target.value)}
                        />
                      ) : (
                        <input
                          {...common}
                          required={spec.required}
                          placeholder={spec.placeholder}
                          onFocus={(e) => focus(e.currentTarget)}
                          onChange={(e) => update(e.target.value)}
                        />
                      )}
                      {err ? (
                        <div id={`${id}-error`} className="field-error" role="alert">
                          {err}
                        </div>
                      ) : v.includes(SECRET_MASK) ? (
                        <div className="hint">
                          {SECRET_MASK} stands for a stored secret: leave it to keep that value while the URL
                          keeps its host, or type a new one.
                        </div>
                      ) : null}
                    </div>
                  );
                })}
              </div>
              {actionErrors.map(([k, m]) => (
                <div key={k} className="field-error" role="alert">
                  {m}
                </div>
              ))}
              {rendered?.[i] !== undefined ? (
                <details className="wf-rendered">
                  <summary>Rendered on the sample request</summary>
                  <pre>{JSON.stringify(rendered[i], null, 2)}</pre>
                </details>
              ) : null}
            </li>
          );
        })}
      </ol>
      {listErrors.map(([k, m]) => (
        <div key={k} className="field-error" role="alert">
          {m}
        </div>
      ))}
      <div className="row-actions wf-add-actions">
        {(Object.keys(ACTION_LABELS) as ActionType[]).map((t) => (
          <button
            key={t}
            type="button"
            className="btn btn-small"
            disabled={value.length >= 20}
            onClick={() => onChange([...value, emptyAction(t, nextKey())])}
          >
            Add {ACTION_LABELS[t].toLowerCase()}
          </button>
        ))}
      </div>
    </fieldset>
  );
}
