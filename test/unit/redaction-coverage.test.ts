import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { previewRedaction } from '../../services/api/rules/rules-preview.js';
import { compileProcessorRules } from '../../services/processor/compiled-rules.js';
import { Decoder } from '../../services/processor/decoder.js';
import { runSteps, type StepContext, type StoredRecord } from '../../services/processor/pipeline.js';
import { compileRedaction, redactRecord, type RedactTarget } from '../../services/processor/redaction.js';
import { encodeKept, rulesReadContent } from '../../services/processor/record-encoder.js';
import {
  emptyRules,
  type RedactionRule,
  type RedactionType,
  type SensitiveRedactionRule,
} from '../../services/processor/rule-snapshot.js';
import {
  compileSensitiveRules,
  redactSensitive,
  type SensitiveRuleInput,
  type SensitiveTarget,
} from '../../services/processor/sensitive/index.js';
import { PROCESSOR_STEPS } from '../../services/processor/steps/index.js';
import { userinfoPassword } from '../../services/processor/url-userinfo.js';
import {
  compileRedaction as compileClientRedaction,
  redactRecord as redactClientRecord,
  type CompiledRedaction as ClientRedaction,
} from '../../sdk/node/src/rules.js';
import { compileSensitive, redactSensitiveRules } from '../../sdk/node/src/content-rules.js';
import type { CapturedRecord, RemoteRedactionRule } from '../../sdk/node/src/types.js';

/**
 * Where redaction reaches beyond headers, query and bodies (docs/rules.md, docs/sensitive-data.md,
 * docs/processing.md): a client's `endpoint` (redacted as a path, its query too), the record's own
 * text fields under `*` (`traces`, `tags`, `note`, `contextSid`), the userinfo password of
 * `request.url` and `request.host`, `name=value` pairs in a URL's fragment and in header values.
 * The same cases through the engine, the processor's steps and sink, Shape B field rules, the rule
 * preview and the Node.js SDK (which runs the server's Shape A engine and mirrors Shape B).
 */

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** The audit's three credential rules at scope `*`. */
const AUDIT_TYPES = ['authorization', 'api_key', 'password'] as const;
const auditRules = (scopes: SensitiveRuleInput['scopes'] = ['*']) =>
  compileSensitiveRules(AUDIT_TYPES.map((type) => ({ sid: type, type, level: 'full' as const, scopes })));

/** The audit's records: every plaintext below must be gone from what is stored. */
const SECRETS = [
  'ENDPOINTPW111',
  'TRACEBEARER343434',
  'TRACEOBJPW',
  'TAGAPIKEY121212',
  'NOTEPASSWORD000',
  'CTXPW222',
  'HOSTPW333',
  'URLPW444',
  'FRAGAT666',
  'HASHROUTE777',
  'HDRINLINE1010zz',
  'HDRLIST2020',
];

function auditRecord(): StoredRecord {
  return {
    sid: 'req_AAAAAAAAAAAAAAAAAAAAAAAAAAA',
    accountSid: 'acc_1',
    bucketSid: 'bkt_1',
    environmentSid: 'prod01',
    createdAt: '2026-11-01T00:00:00.000Z',
    receivedAt: '2026-11-01T00:00:00.000Z',
    endpoint: '/login?password=ENDPOINTPW111',
    traces: ['Authorization: Bearer TRACEBEARER343434', { step: 'db', password: 'TRACEOBJPW' }],
    tags: [
      { key: 'api_key', value: 'TAGAPIKEY121212' },
      { key: 'release', value: '2026.11.3' },
    ],
    note: 'password=NOTEPASSWORD000',
    contextSid: 'ctx-password=CTXPW222',
    request: {
      method: 'GET',
      host: 'user:HOSTPW333@api.example.com',
      path: '/a',
      url: 'https://user:URLPW444@api.example.com/a?Access_Token=x#access_token=FRAGAT666',
      headers: {
        'X-Custom': 'token=HDRINLINE1010zz',
        'X-List': ['plain', 'secret=HDRLIST2020'],
        'content-type': 'application/json; charset=utf-8',
      },
    },
    response: { statusCode: 200, headers: { 'cache-control': 'max-age=60' } },
  };
}

const leaks = (v: unknown): string[] => {
  const text = JSON.stringify(v);
  return SECRETS.filter((s) => text.includes(s));
};

describe('Shape A reaches the endpoint, the record fields, userinfo, fragments and header pairs', () => {
  it('redacts every field of the audit record with authorization, api_key and password on `*`', () => {
    const rec = auditRecord();
    const snapshot = structuredClone(rec);
    const res = redactSensitive(rec, auditRules());
    expect(rec).toEqual(snapshot); // never mutated
    expect(leaks(res.record)).toEqual([]);
    const out = res.record;
    expect(out.endpoint).toBe('/login?password=[REDACTED:password]');
    expect(out.traces).toEqual([
      'Authorization: [REDACTED:authorization]',
      { step: 'db', password: '[REDACTED:password]' },
    ]);
    expect(out.tags).toEqual([
      { key: 'api_key', value: '[REDACTED:password]' },
      { key: 'release', value: '2026.11.3' },
    ]);
    expect(out.note).toBe('password=[REDACTED:password]');
    expect(out.contextSid).toBe('ctx-password=[REDACTED:password]');
    expect(out.request.host).toBe('user:[REDACTED:password]@api.example.com');
    expect(out.request.url).toBe(
      'https://user:[REDACTED:password]@api.example.com/a?Access_Token=[REDACTED:password]#access_token=[REDACTED:password]',
    );
    expect(out.request.headers).toEqual({
      'X-Custom': 'token=[REDACTED:password]',
      'X-List': ['plain', 'secret=[REDACTED:password]'],
      'content-type': 'application/json; charset=utf-8',
    });
    expect(out.response).toBe(rec.response);
    expect(res.changes).toEqual([
      { scope: 'request.headers', path: 'X-Custom', type: 'password' },
      { scope: 'request.headers', path: 'X-List', type: 'password' },
      { scope: 'request.url', path: 'url', type: 'password' },
      { scope: 'request.query', path: 'Access_Token', type: 'password' },
      { scope: 'request.url', path: 'host', type: 'password' },
      { scope: 'request.query', path: 'password', type: 'password' },
      { scope: 'record', path: 'note', type: 'password' },
      { scope: 'record', path: 'contextSid', type: 'password' },
      { scope: 'record', path: 'tags.api_key', type: 'password' },
      { scope: 'record', path: 'traces[0]', type: 'authorization' },
      { scope: 'record', path: 'traces[1].password', type: 'password' },
    ]);
    // Applying the rules again changes nothing more (an SDK's output passes the server unchanged).
    const again = redactSensitive(out, auditRules());
    expect(again.redacted).toBe(false);
    expect(again.record).toBe(out);
  });

  it('a record redacted once passes again unchanged, at every level (text bodies too)', () => {
    for (const level of ['full', 'mask', 'partial'] as const) {
      const c = compileSensitiveRules(AUDIT_TYPES.map((type) => ({ sid: type, type, level })));
      const rec = auditRecord();
      rec.request.body = 'password=hunter2\nAuthorization: Bearer abc123def456ghi\n';
      rec.request.contentType = 'text/plain';
      const once = redactSensitive(rec, c);
      expect(leaks(once.record), level).toEqual([]);
      expect(once.record.request.body, level).not.toMatch(/hunter2|abc123def456ghi/);
      const twice = redactSensitive(once.record, c);
      expect(twice.changes, level).toEqual([]);
      expect(twice.record, level).toBe(once.record);
    }
  });

  it('keeps endpoint templates, hosts with ports and clean record fields as they are', () => {
    const rec: SensitiveTarget = {
      endpoint: '/users/:id/orders/{orderId}',
      traces: ['GET /users/42 200 12ms'],
      tags: [{ key: 'region', value: 'eu-west-1' }],
      note: 'retried once',
      contextSid: 'ctx-42',
      request: {
        host: 'api.example.com:8443',
        url: 'https://api.example.com:8443/users/42#top',
        path: '/users/42',
      },
    };
    const res = redactSensitive(rec, auditRules());
    expect(res.redacted).toBe(false);
    expect(res.record).toBe(rec);
  });

  it('the endpoint and the userinfo belong to `request.url`; the record fields to `*` only', () => {
    const rec = auditRecord();
    const url = redactSensitive(rec, auditRules(['request.url'])).record;
    expect(url.endpoint).toBe('/login?password=[REDACTED:password]');
    expect(url.request.host).toBe('user:[REDACTED:password]@api.example.com');
    expect([url.note, url.tags, url.traces, url.contextSid]).toEqual([
      rec.note,
      rec.tags,
      rec.traces,
      rec.contextSid,
    ]);
    // Every scope named one by one is not `*`: the record's own fields stay.
    const six = redactSensitive(
      rec,
      auditRules([
        'request.headers',
        'request.query',
        'request.body',
        'request.url',
        'response.headers',
        'response.body',
      ]),
    ).record;
    expect(six.note).toBe(rec.note);
    expect(six.tags).toBe(rec.tags);
    // A query-only rule reaches the endpoint's query, not its path nor the host.
    const query = redactSensitive(rec, auditRules(['request.query'])).record;
    expect(query.endpoint).toBe('/login?password=[REDACTED:password]');
    expect(query.request.host).toBe(rec.request.host);
    // A body-only rule touches none of them.
    expect(redactSensitive(rec, auditRules(['request.body'])).redacted).toBe(false);
  });

  it('value detectors scan tag values, traces, notes and the endpoint; levels apply', () => {
    const c = compileSensitiveRules([
      { sid: 'e', type: 'email', level: 'partial', scopes: ['*'] },
      { sid: 'p', type: 'password', level: 'mask', scopes: ['*'] },
    ]);
    const res = redactSensitive(
      {
        endpoint: '/users/jane@example.com',
        tags: [
          { key: 'owner', value: 'jane@example.com' },
          { key: 'session_token', value: 'abc-123' },
        ],
        traces: ['mailed bob@example.com'],
        note: 'ask jane@example.com',
        request: { host: 'user:pw1234@api.example.com' },
      },
      c,
    ).record;
    expect(res.endpoint).toBe('/users/****@example.com');
    expect(res.tags).toEqual([
      { key: 'owner', value: '****@example.com' },
      { key: 'session_token', value: '***-***' },
    ]);
    expect(res.traces).toEqual(['mailed ***@example.com']);
    expect(res.note).toBe('ask ****@example.com');
    expect(res.request.host).toBe('user:******@api.example.com');
  });

  it('finds key rules in a fragment: `#name=value`, `#/route?name=value`, percent-encoded names', () => {
    const c = compileSensitiveRules([{ sid: 'p', type: 'password', level: 'full', scopes: ['request.url'] }]);
    const cases: [string, string][] = [
      [
        'https://a.example/cb#access_token=FRAGAT666&state=s1',
        'https://a.example/cb#access_token=[REDACTED:password]&state=s1',
      ],
      [
        'https://a.example/#/callback?code=c&id_token=HASHROUTE777',
        'https://a.example/#/callback?code=c&id_token=[REDACTED:password]',
      ],
      [
        'https://a.example/x#access%5Ftoken=FRAGAT666',
        'https://a.example/x#access%5Ftoken=[REDACTED:password]',
      ],
      ['https://a.example/x#section-2', 'https://a.example/x#section-2'],
    ];
    for (const [url, expected] of cases)
      expect(redactSensitive({ request: { url } }, c).record.request.url, url).toBe(expected);
  });

  it('header values: `name=value` pairs for key rules, common headers unchanged', () => {
    const c = auditRules(['request.headers', 'response.headers']);
    const headers = {
      'content-type': 'multipart/form-data; boundary=----x1234',
      'accept-language': 'en-US,en;q=0.9',
      'cache-control': 'no-cache, max-age=0',
      link: '<https://api.example.com/p?page=2>; rel="next"',
      forwarded: 'for=192.0.2.60;proto=https;by=203.0.113.43',
      prefer: 'return=minimal',
      referer: 'https://app.example.com/cb?access_token=REFTOKEN55&x=1',
      'x-debug': 'user=jane; api_key=HDRINLINE1010zz',
    };
    const res = redactSensitive({ request: { headers }, response: { headers } }, c).record;
    const expected = {
      ...headers,
      referer: 'https://app.example.com/cb?access_token=[REDACTED:password]&x=1',
      'x-debug': 'user=jane; api_key=[REDACTED:password]',
    };
    expect(res.request.headers).toEqual(expected);
    expect(res.response!.headers).toEqual(expected);
  });

  it('finds the userinfo password only in an authority', () => {
    expect(userinfoPassword('https://u:p%40ss@h.example/x@y', false)).toEqual([10, 16]);
    expect(userinfoPassword('u:pw@h.example', true)).toEqual([2, 4]);
    expect(userinfoPassword('https://u@h.example', false)).toBeNull(); // no password
    expect(userinfoPassword('https://u:@h.example', false)).toBeNull(); // an empty one
    expect(userinfoPassword('https://h.example/p?next=https://u:p@x', false)).toBeNull();
    expect(userinfoPassword('/p/u:pw@x', false)).toBeNull(); // a path is no URL with an authority
    expect(userinfoPassword('h.example:8443', true)).toBeNull();
  });
});

// ------------------------------------------------------------------ the processor's steps and sink

const header = JSON.stringify({ v: 2, accountSid: 'acc_1', bucketSid: 'bkt_1' });

function context(rules: ReturnType<typeof emptyRules>): StepContext {
  return { accountSid: 'acc_1', bucketSid: 'bkt_1', rules: compileProcessorRules(rules).forBucket('bkt_1') };
}

function shapeA(type: string): SensitiveRedactionRule {
  return {
    sid: type,
    accountSid: 'acc_1',
    type,
    pattern: null,
    applyTo: null,
    level: 'full',
    scopes: ['*'],
    buckets: null,
    environments: null,
  };
}

function shapeB(
  fieldPath: string,
  redactionType: RedactionType,
  replacementValue: string | null = null,
): RedactionRule {
  return {
    sid: fieldPath,
    accountSid: 'acc_1',
    name: fieldPath,
    fieldPath,
    redactionType,
    replacementValue,
    buckets: null,
    environments: null,
  };
}

/** What the sink stores for a line after the processor's steps (the received line or the record). */
function storedText(line: string, ctx: StepContext): string {
  const out = new Decoder().decode(Buffer.from(`${header}\n${line}`), 0, '0');
  const d = out.records[0]!;
  const res = runSteps(d.record, ctx, PROCESSOR_STEPS);
  if (res.kind !== 'ok') throw new Error(res.kind);
  const text = encodeKept(d, res.record, rulesReadContent(ctx.rules));
  return (text ?? Buffer.from(JSON.stringify(res.record))).toString();
}

describe('the processor stores what the rules left', () => {
  it('Shape A: a changed record field makes the sink serialise the record, not splice the line', () => {
    const ctx = context({ ...emptyRules('acc_1'), sensitiveRedactions: AUDIT_TYPES.map(shapeA) });
    const { accountSid: _a, ...line } = auditRecord();
    // Only record fields hold secrets: the parts are unchanged, the line must still not be kept.
    const onlyFields = { ...line, request: { method: 'GET', path: '/a' }, response: null };
    for (const rec of [line, onlyFields]) {
      const text = storedText(JSON.stringify(rec), ctx);
      expect(leaks(text)).toEqual([]);
      expect(JSON.parse(text)).toMatchObject({ redacted: true, note: 'password=[REDACTED:password]' });
    }
  });

  it('Shape A: a derived endpoint comes from the redacted path; a sent one is redacted and kept', () => {
    const ctx = context({ ...emptyRules('acc_1'), sensitiveRedactions: AUDIT_TYPES.map(shapeA) });
    const base = { ...auditRecord(), accountSid: undefined };
    const sent = JSON.parse(
      storedText(JSON.stringify({ ...base, endpoint: '/users/:id?api_key=K1234567' }), ctx),
    );
    expect(sent.endpoint).toBe('/users/:id?api_key=[REDACTED:password]');
    const derived = JSON.parse(
      storedText(
        JSON.stringify({
          ...base,
          endpoint: undefined,
          request: { method: 'GET', path: '/u/42?password=P9' },
        }),
        ctx,
      ),
    );
    expect(derived.endpoint).toBe('/u/{id}');
    expect(derived.request.path).toBe('/u/42?password=[REDACTED:password]');
  });

  it('Shape B: a query rule reaches the endpoint and the fragment; a field name reaches tags and userinfo', () => {
    const ctx = context({
      ...emptyRules('acc_1'),
      redactions: [
        shapeB('$.request.queryString.password', 'replace', '[pw]'),
        shapeB('$.request.queryString.access_token', 'remove'),
        shapeB('$.request.headers.Authorization', 'mask'),
        shapeB('$..api_key', 'hash'),
      ],
    });
    const text = storedText(JSON.stringify({ ...auditRecord(), accountSid: undefined }), ctx);
    const stored = JSON.parse(text) as StoredRecord;
    expect(stored.endpoint).toBe('/login?password=%5Bpw%5D');
    expect(stored.tags).toEqual([
      { key: 'api_key', value: sha('TAGAPIKEY121212') },
      { key: 'release', value: '2026.11.3' },
    ]);
    // Every rule above names a credential: the replace, then the remove drops the password.
    expect(stored.request.host).toBe('user@api.example.com');
    expect(stored.request.url).toBe('https://user@api.example.com/a?Access_Token=x');
    // Shape B does not scan free text: traces, note, contextSid are Shape A's (`*`).
    expect(stored.note).toBe('password=NOTEPASSWORD000');
  });
});

describe('Shape B field rules (redaction.ts)', () => {
  const apply = (rec: RedactTarget, ...rules: RedactionRule[]) => {
    redactRecord(
      rec,
      rules.map((r) => {
        const c = compileRedaction(r);
        if (!c.ok) throw new Error(c.error);
        return c.rule;
      }),
    );
    return rec;
  };

  it('tags whose key is the last name of a path, case-insensitive; remove drops the tag', () => {
    const tags = () => [
      { key: 'Password', value: 'p1' },
      { key: 'authorization', value: 'Bearer x' },
      { key: 'card', value: '4111' },
      { key: 'env', value: 'prod' },
    ];
    const rec = apply(
      { request: {}, tags: tags() },
      shapeB('$..password', 'replace', 'R'),
      shapeB('$.request.headers.Authorization', 'remove'),
      shapeB('$.request.body.payment.card', 'mask'),
      shapeB('$.request.headers[*]', 'mask'), // no named key: tags untouched
    );
    expect(rec.tags).toEqual([
      { key: 'Password', value: 'R' },
      { key: 'card', value: '****' },
      { key: 'env', value: 'prod' },
    ]);
  });

  it('the userinfo password: only credential rules, each action', () => {
    const rec = () => ({ request: { url: 'https://me:s3cret@h.example/p', host: 'me:s3cret@h.example' } });
    expect(apply(rec(), shapeB('$..card', 'mask')).request).toEqual(rec().request);
    expect(apply(rec(), shapeB('$..password', 'mask')).request).toEqual({
      url: 'https://me:******@h.example/p',
      host: 'me:******@h.example',
    });
    expect(apply(rec(), shapeB('$.request.headers.x-api-key', 'replace', '[key]')).request.host).toBe(
      'me:%5Bkey%5D@h.example',
    );
    expect(apply(rec(), shapeB('$.request.queryString.token', 'remove')).request).toEqual({
      url: 'https://me@h.example/p',
      host: 'me@h.example',
    });
  });

  it('query rules: the fragment pairs and the endpoint query, the URL otherwise byte for byte', () => {
    const rec = apply(
      {
        request: {
          url: 'https://h.example/cb?x=1#access_token=FRAGAT666&state=s',
          path: '/cb#/r?access_token=HASHROUTE777',
        },
        endpoint: '/cb?access_token=E1#frag',
      },
      shapeB('$.request.queryString.access_token', 'replace', 'R'),
    );
    expect(rec.request.url).toBe('https://h.example/cb?x=1#access_token=R&state=s');
    expect(rec.request.path).toBe('/cb#/r?access_token=R');
    expect(rec.endpoint).toBe('/cb?access_token=R#frag');
    const kept = apply(
      { request: { url: 'https://h.example/cb?x=1#top' } },
      shapeB('$.request.queryString.y', 'remove'),
    );
    expect(kept.request.url).toBe('https://h.example/cb?x=1#top');
  });
});

describe('the rule preview agrees (rules-preview.ts)', () => {
  it('shows the record fields a Shape A draft changes', () => {
    const sample = { ...auditRecord() };
    const out = previewRedaction(
      'acc_1',
      { type: 'password', level: 'full', scopes: ['*'] },
      sample,
      undefined,
    );
    expect(out.changed).toBe(true);
    const paths = out.changes.map((c) => c.path);
    for (const p of ['endpoint', 'note', 'contextSid', 'tags[0].value', 'traces[1].password', 'request.host'])
      expect(paths, p).toContain(p);
  });
});

// ------------------------------------------------------------------ the Node.js SDK

function captured(): CapturedRecord {
  return {
    sid: 'req_AAAAAAAAAAAAAAAAAAAAAAAAAAA',
    direction: 'out',
    createdAt: '2026-11-01T00:00:00.000Z',
    endpoint: '/login?password=ENDPOINTPW111',
    request: {
      host: 'user:HOSTPW333@api.example.com',
      method: 'GET',
      path: '/a',
      port: 443,
      url: 'https://user:URLPW444@api.example.com/a#access_token=FRAGAT666',
      queryString: {},
      headers: { 'x-custom': 'token=HDRINLINE1010zz' },
      contentType: null,
      size: 0,
    },
    response: null,
    timings: null,
    tags: [{ key: 'api_key', value: 'TAGAPIKEY121212' }],
  };
}

describe('the SDK applies the same reach', () => {
  it('Shape A (the server engine): endpoint, tags, host and URL userinfo, fragment and header pairs', () => {
    const rec = captured();
    expect(
      redactSensitiveRules(
        rec,
        compileSensitive(AUDIT_TYPES.map((type) => ({ sid: type, type, level: 'full' }))),
      ),
    ).toBe(true);
    expect(leaks(rec)).toEqual([]);
    expect(rec.endpoint).toBe('/login?password=[REDACTED:password]');
    expect(rec.tags).toEqual([{ key: 'api_key', value: '[REDACTED:password]' }]);
  });

  it('Shape B (mirrored): tags by key, userinfo for credential rules, fragment and endpoint query', () => {
    const rules = (...r: RemoteRedactionRule[]) =>
      r.map((x) => compileClientRedaction(x)).filter((x): x is ClientRedaction => x !== null);
    const rec = captured();
    redactClientRecord(
      rec,
      rules(
        { field: '$.request.queryString.access_token', action: 'remove' },
        { field: '$.request.queryString.password', action: 'replace', replacement: 'R' },
        { field: '$..API_KEY', action: 'mask' },
      ),
      '',
    );
    expect(rec.endpoint).toBe('/login?password=R');
    expect(rec.tags).toEqual([{ key: 'api_key', value: '***************' }]);
    expect(rec.request.url).toBe('https://user@api.example.com/a');
    expect(rec.request.host).toBe('user@api.example.com');
    const plain = captured();
    redactClientRecord(plain, rules({ field: '$.request.body.card', action: 'mask' }), '');
    expect(plain.request.host).toBe('user:HOSTPW333@api.example.com');
  });
});
