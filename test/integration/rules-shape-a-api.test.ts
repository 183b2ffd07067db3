import { describe, expect, it } from 'vitest';
import { APPLY_TO, REDACTION_LEVELS, REDACTION_SCOPES } from '../../schemas/rules.schema.js';
import { PREDEFINED_TYPES, sensitiveCatalogue } from '../../services/processor/sensitive/index.js';
import { api, newAccount, type HttpResult } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

/**
 * Shape A exclusion and redaction rules through the real API (docs/rules.md
 * "Shape A"): create / list / get / update / soft delete with the spec's fields, the 400s, the
 * predefined-type catalogue, the SDK settings serving client rules, account isolation, and Shape B
 * side by side unchanged.
 */

type Rec = Record<string, unknown> & { sid: string };
type List<T = Rec> = { hasMore: boolean; records: T[] };
type ErrorBody = {
  success: false;
  error: { code: string; message: string; details: Record<string, unknown> };
};

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const errorOf = (res: HttpResult<unknown>) => (res.body as ErrorBody).error;

function expect400(res: HttpResult<unknown>, field: string): ErrorBody['error'] {
  expect(res.status, res.text).toBe(400);
  const err = errorOf(res);
  expect(err.code).toBe('VALIDATION_ERROR');
  expect((res.body as ErrorBody).success).toBe(false);
  expect(Object.keys(err.details), res.text).toContain(field);
  return err;
}

const EXCLUSION_A_KEYS = [
  'sid',
  'accountSid',
  'description',
  'criteria',
  'buckets',
  'environments',
  'enabled',
  'createdAt',
  'updatedAt',
  'deletedAt',
].sort();
const REDACTION_A_KEYS = [
  'sid',
  'accountSid',
  'description',
  'buckets',
  'scopes',
  'pattern',
  'type',
  'redactAt',
  'level',
  'applyTo',
  'environments',
  'enabled',
  'createdAt',
  'updatedAt',
  'deletedAt',
].sort();

describe('Shape A exclusions', () => {
  it('creates, lists, gets, replaces and soft-deletes with the spec fields', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/exclusions`;

    const created = await a.post<Rec>(base, { criteria: 'method:OPTIONS status:2xx' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      sid: expect.stringMatching(/^xcl_[A-Za-z0-9]{27}$/),
      accountSid: acct.accountSid,
      description: null,
      criteria: 'method:OPTIONS status:2xx',
      buckets: null,
      environments: null,
      enabled: true,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: null,
      deletedAt: null,
    });
    expect(Object.keys(created.body).sort()).toEqual(EXCLUSION_A_KEYS);

    const second = await a.post<Rec>(base, {
      description: 'internal probes',
      criteria: 'path:/internal/* -env:prod01',
      buckets: [acct.bucketSid],
      environments: ['stage1'],
      enabled: false,
    });
    expect(second.status, second.text).toBe(201);
    expect(second.body).toMatchObject({
      description: 'internal probes',
      buckets: [acct.bucketSid],
      environments: ['stage1'],
      enabled: false,
    });

    // A Shape B rule lives beside them, in its own shape.
    const shapeB = await a.post<Rec>(base, { name: 'health', pathPattern: '/health', method: 'get' });
    expect(shapeB.status, shapeB.text).toBe(201);
    expect(shapeB.body).toMatchObject({
      name: 'health',
      pathPattern: '/health',
      method: 'GET',
      isActive: true,
    });
    expect(shapeB.body).not.toHaveProperty('criteria');
    expect(shapeB.body).not.toHaveProperty('deletedAt');

    const list = await a.get<List>(`${base}?sort=createdAt&order=asc`);
    expect(list.status, list.text).toBe(200);
    expect(list.body.records).toEqual([created.body, second.body, shapeB.body]);
    expect((await a.get<List>(`${base}?shape=A&order=asc`)).body.records.map((r) => r.sid)).toEqual([
      created.body.sid,
      second.body.sid,
    ]);
    expect((await a.get<List>(`${base}?shape=B`)).body.records.map((r) => r.sid)).toEqual([shapeB.body.sid]);

    const got = await a.get<Rec>(`${base}/${created.body.sid}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);

    // PUT keeps the shape: a full replace of the Shape A fields; buckets/environments kept when omitted.
    const upd = await a.put<Rec>(`${base}/${second.body.sid}`, {
      criteria: 'host:*.internal.example.com',
      enabled: true,
    });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body).toEqual({
      ...second.body,
      description: null,
      criteria: 'host:*.internal.example.com',
      enabled: true,
      updatedAt: expect.stringMatching(ISO_MS),
    });
    // Disable, as the dashboard's toggle does.
    const off = await a.put<Rec>(`${base}/${created.body.sid}`, {
      criteria: created.body.criteria,
      enabled: false,
    });
    expect(off.body).toMatchObject({ enabled: false, criteria: 'method:OPTIONS status:2xx' });

    // DELETE of a Shape A rule is a soft delete.
    const del = await a.delete(`${base}/${created.body.sid}`);
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ sid: created.body.sid, deleted: true });
    const afterDel = await a.get<List>(base);
    expect(afterDel.body.records.map((r) => r.sid).sort()).toEqual([second.body.sid, shapeB.body.sid].sort());
    const withDeleted = await a.get<List>(`${base}?includeDeleted=true&order=asc`);
    expect(withDeleted.body.records.map((r) => r.sid)).toEqual([
      created.body.sid,
      second.body.sid,
      shapeB.body.sid,
    ]);
    const deletedRow = withDeleted.body.records[0]!;
    expect(deletedRow.deletedAt).toMatch(ISO_MS);
    const onlyDeleted = await a.get<List>(`${base}?deleted=true`);
    expect(onlyDeleted.body.records.map((r) => r.sid)).toEqual([created.body.sid]);
    // Still readable by sid with its deletedAt; not replaceable nor deletable again.
    expect((await a.get<Rec>(`${base}/${created.body.sid}`)).body.deletedAt).toBe(deletedRow.deletedAt);
    expect(
      (await a.put(`${base}/${created.body.sid}`, { criteria: 'method:GET', enabled: true })).status,
    ).toBe(404);
    expect((await a.delete(`${base}/${created.body.sid}`)).status).toBe(404);

    // DELETE of a Shape B rule still removes it.
    expect((await a.delete(`${base}/${shapeB.body.sid}`)).status).toBe(200);
    expect((await a.get(`${base}/${shapeB.body.sid}`)).status).toBe(404);
    expect((await a.get<List>(`${base}?includeDeleted=true`)).body.records.map((r) => r.sid)).not.toContain(
      shapeB.body.sid,
    );
  });

  it('refuses criteria that do not parse (with the position), mixed shapes and a shape change', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/exclusions`;

    const bad = expect400(await a.post(base, { criteria: 'method:GET colour:red' }), 'body.criteria');
    expect(bad.details.position).toBe(11);
    expect(bad.message).toContain('position 11');
    expect(String(bad.details['body.criteria'])).toContain('colour');
    const quote = expect400(await a.post(base, { criteria: 'path:"/a' }), 'body.criteria');
    expect(quote.details.position).toBe(5);
    expect400(await a.post(base, { criteria: '' }), 'body.criteria');
    expect400(await a.post(base, { criteria: '   ' }), 'body.criteria');
    expect400(await a.post(base, { criteria: 'x'.repeat(5000) }), 'body.criteria');
    expect400(await a.post(base, { criteria: 42 }), 'body.criteria');
    expect400(await a.post(base, { enabled: true }), 'body.criteria');
    expect400(await a.post(base, { criteria: 'method:GET', isolated: true }), 'body.isolated');
    expect400(await a.post(base, { criteria: 'method:GET', buckets: ['bkt_nope'] }), 'body.buckets.0');

    const mixed = await a.post(base, { criteria: 'method:GET', name: 'x', pathPattern: '/x', method: 'GET' });
    const err = expect400(mixed, 'body.criteria');
    expect(err.details).toMatchObject({
      'body.criteria': 'is a Shape A field',
      'body.name': 'is a Shape B field',
      'body.pathPattern': 'is a Shape B field',
      'body.method': 'is a Shape B field',
    });
    expect(err.message).toMatch(/mixes Shape A fields \(criteria\) and Shape B fields/);

    // PUT keeps the shape.
    const ruleA = (await a.post<Rec>(base, { criteria: 'method:GET' })).body;
    const ruleB = (await a.post<Rec>(base, { name: 'b', pathPattern: '/b', method: 'GET' })).body;
    const toB = await a.put(`${base}/${ruleA.sid}`, {
      name: 'b',
      pathPattern: '/b',
      method: 'GET',
      isActive: true,
    });
    expect400(toB, 'body.criteria');
    expect(errorOf(toB).message).toContain('Shape A rule');
    const toA = await a.put(`${base}/${ruleB.sid}`, { criteria: 'method:GET', enabled: true });
    expect400(toA, 'body.pathPattern');
    expect400(
      await a.put(`${base}/${ruleA.sid}`, { criteria: 'status:abc', enabled: true }),
      'body.criteria',
    );
    expect400(await a.put(`${base}/${ruleA.sid}`, { criteria: 'method:GET' }), 'body.enabled');
    // Nothing of the refused requests was stored.
    expect((await a.get<List>(`${base}?includeDeleted=true`)).body.records).toHaveLength(2);
  });
});

describe('Shape A redactions', () => {
  it('creates predefined and custom rules, lists, gets, replaces and soft-deletes them', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/redactions`;

    const card = await a.post<Rec>(base, { type: 'card', level: 'partial' });
    expect(card.status, card.text).toBe(201);
    expect(card.body).toEqual({
      sid: expect.stringMatching(/^rdc_[A-Za-z0-9]{27}$/),
      accountSid: acct.accountSid,
      description: null,
      buckets: null,
      scopes: ['*'],
      pattern: null,
      type: 'card',
      redactAt: 'server',
      level: 'partial',
      applyTo: null,
      environments: null,
      enabled: true,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: null,
      deletedAt: null,
    });
    expect(Object.keys(card.body).sort()).toEqual(REDACTION_A_KEYS);

    const custom = await a.post<Rec>(base, {
      description: 'customer references',
      type: 'customer-ref',
      pattern: 'CUST-[0-9]{6}',
      applyTo: 'value',
      level: 'mask',
      scopes: ['request.body', 'response.body'],
      redactAt: 'client',
      buckets: [acct.bucketSid],
      environments: ['prod01'],
      enabled: true,
    });
    expect(custom.status, custom.text).toBe(201);
    expect(custom.body).toMatchObject({
      description: 'customer references',
      type: 'customer-ref',
      pattern: 'CUST-[0-9]{6}',
      applyTo: 'value',
      level: 'mask',
      scopes: ['request.body', 'response.body'],
      redactAt: 'client',
      buckets: [acct.bucketSid],
      environments: ['prod01'],
    });
    const keyRule = await a.post<Rec>(base, {
      type: 'internal_secret',
      pattern: '(?i)^x-internal-',
      applyTo: 'key',
      level: 'full',
      scopes: ['request.headers'],
      redactAt: 'client',
    });
    expect(keyRule.status, keyRule.text).toBe(201);

    const shapeB = await a.post<Rec>(base, { name: 'pw', fieldPath: '$..password', redactionType: 'mask' });
    expect(shapeB.status, shapeB.text).toBe(201);
    expect(shapeB.body).not.toHaveProperty('type');
    expect(shapeB.body).toMatchObject({ fieldPath: '$..password', redactionType: 'mask', isActive: true });

    const list = await a.get<List>(`${base}?order=asc`);
    expect(list.body.records).toEqual([card.body, custom.body, keyRule.body, shapeB.body]);
    expect((await a.get(`${base}/${custom.body.sid}`)).body).toEqual(custom.body);

    // PUT: full replace of Shape A fields; redactAt/buckets/environments kept when omitted.
    const upd = await a.put<Rec>(`${base}/${custom.body.sid}`, {
      type: 'customer-ref',
      pattern: 'CUST-[0-9]{8}',
      applyTo: 'value',
      level: 'partial',
      enabled: false,
    });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body).toEqual({
      ...custom.body,
      description: null,
      pattern: 'CUST-[0-9]{8}',
      level: 'partial',
      scopes: ['*'],
      enabled: false,
      updatedAt: expect.stringMatching(ISO_MS),
    });
    // A custom rule can become a predefined one (same shape).
    const toEmail = await a.put<Rec>(`${base}/${keyRule.body.sid}`, {
      type: 'email',
      level: 'partial',
      scopes: ['request.query'],
      redactAt: 'server',
      enabled: true,
    });
    expect(toEmail.body).toMatchObject({ type: 'email', pattern: null, applyTo: null, redactAt: 'server' });

    expect((await a.delete(`${base}/${card.body.sid}`)).status).toBe(200);
    expect((await a.get<List>(base)).body.records.map((r) => r.sid)).not.toContain(card.body.sid);
    const all = await a.get<List>(`${base}?includeDeleted=true&shape=A&order=asc`);
    expect(all.body.records.map((r) => r.sid)).toEqual([card.body.sid, custom.body.sid, keyRule.body.sid]);
    expect(all.body.records[0]!.deletedAt).toMatch(ISO_MS);
    expect((await a.delete(`${base}/${card.body.sid}`)).status).toBe(404);
  });

  it('refuses unknown types, uncompilable patterns, bad levels and scopes, mixed shapes', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/redactions`;

    const unknown = expect400(await a.post(base, { type: 'emial', level: 'full' }), 'body.type');
    expect(unknown.details.validTypes).toEqual([...PREDEFINED_TYPES]);
    expect(unknown.message).toContain('emial');
    for (const t of PREDEFINED_TYPES) expect(unknown.message).toContain(t);

    const re = expect400(
      await a.post(base, { type: 'order', pattern: 'ORD-(\\d+', applyTo: 'value', level: 'full' }),
      'body.pattern',
    );
    expect(re.details).toMatchObject({ position: 4, reason: 'missing closing )' });
    expect(String(re.details['body.pattern'])).toContain(JSON.stringify('ORD-(\\d+'));
    // The message names the pattern (JSON-quoted) and the position.
    expect(re.message).toContain(JSON.stringify('ORD-(\\d+'));
    expect(re.message).toContain('position 4');
    // Backreferences and lookarounds are not RE2: refused, never run.
    expect400(
      await a.post(base, { type: 'rep', pattern: '(a)\\1', applyTo: 'value', level: 'full' }),
      'body.pattern',
    );
    expect400(
      await a.post(base, { type: 'la', pattern: 'a(?=b)', applyTo: 'key', level: 'full' }),
      'body.pattern',
    );
    expect400(
      await a.post(base, { type: 'x', pattern: 'a'.repeat(1025), applyTo: 'value', level: 'full' }),
      'body.pattern',
    );
    // A custom type needs applyTo; a predefined one takes no pattern, and applyTo value or null.
    expect400(await a.post(base, { type: 'order', pattern: 'ORD-[0-9]+', level: 'full' }), 'body.applyTo');
    expect400(await a.post(base, { type: 'email', pattern: '.+@.+', level: 'full' }), 'body.pattern');
    expect400(await a.post(base, { type: 'email', applyTo: 'key', level: 'full' }), 'body.applyTo');
    expect400(
      await a.post(base, { type: '9lives', pattern: 'x', applyTo: 'value', level: 'full' }),
      'body.type',
    );

    expect400(await a.post(base, { type: 'email', level: 'half' }), 'body.level');
    expect400(await a.post(base, { type: 'email' }), 'body.level');
    expect400(await a.post(base, { level: 'full' }), 'body.type');
    expect400(
      await a.post(base, { type: 'email', level: 'full', scopes: ['request.cookies'] }),
      'body.scopes.0',
    );
    expect400(await a.post(base, { type: 'email', level: 'full', redactAt: 'edge' }), 'body.redactAt');
    expect400(await a.post(base, { type: 'email', level: 'full', applyTo: 'both' }), 'body.applyTo');

    const mixed = expect400(
      await a.post(base, { type: 'email', level: 'full', fieldPath: '$.email', redactionType: 'mask' }),
      'body.fieldPath',
    );
    expect(mixed.details).toMatchObject({
      'body.type': 'is a Shape A field',
      'body.level': 'is a Shape A field',
      'body.fieldPath': 'is a Shape B field',
      'body.redactionType': 'is a Shape B field',
    });

    const ruleA = (await a.post<Rec>(base, { type: 'jwt', level: 'full' })).body;
    const ruleB = (await a.post<Rec>(base, { name: 'b', fieldPath: '$.b', redactionType: 'remove' })).body;
    expect400(
      await a.put(`${base}/${ruleA.sid}`, {
        name: 'b',
        fieldPath: '$.b',
        redactionType: 'remove',
        isActive: true,
      }),
      'body.type',
    );
    expect400(
      await a.put(`${base}/${ruleB.sid}`, { type: 'jwt', level: 'full', enabled: true }),
      'body.fieldPath',
    );
    expect400(
      await a.put(`${base}/${ruleA.sid}`, { type: 'nope', level: 'full', enabled: true }),
      'body.type',
    );
    expect((await a.get<List>(base)).body.records).toHaveLength(2);
  });

  it('accepts applyTo value on a predefined type (its detector scans values) and refuses key', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/redactions`;
    const created = await a.post<Rec>(base, { type: 'email', applyTo: 'value', level: 'full' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ type: 'email', pattern: null, applyTo: 'value', level: 'full' });
    const sid = created.body.sid as string;
    const replaced = await a.put<Rec>(`${base}/${sid}`, {
      type: 'authorization',
      applyTo: 'value',
      level: 'partial',
      enabled: true,
    });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toMatchObject({ type: 'authorization', pattern: null, applyTo: 'value' });
    expect((await a.get<Rec>(`${base}/${sid}`)).body).toMatchObject({
      type: 'authorization',
      applyTo: 'value',
    });
    // `key` (a pattern searched in field names) is a custom type's: the 400 says what to send.
    for (const type of ['email', 'password']) {
      const err = expect400(await a.post(base, { type, applyTo: 'key', level: 'full' }), 'body.applyTo');
      expect(err.message).toBe('A predefined type takes no pattern, and applyTo value or null');
      expect(err.details['body.applyTo']).toMatch(
        /^must be value or null: the predefined type \w+ scans values/,
      );
    }
    // It redacts exactly as with applyTo null: the preview runs the processor's step on a sample.
    const preview = (applyTo: string | null) =>
      a.post<{ changes: Rec[] }>(`/v1/accounts/${acct.accountSid}/redactions/preview`, {
        rule: { type: 'email', applyTo, level: 'full' },
        record: {
          request: {
            method: 'POST',
            path: '/contact',
            body: 'write to ops@example.org',
            contentType: 'text/plain',
          },
        },
      });
    const [withValue, withNull] = await Promise.all([preview('value'), preview(null)]);
    expect(withValue.status, withValue.text).toBe(200);
    expect(withValue.body.changes).toEqual([
      {
        path: 'request.body',
        kind: 'changed',
        before: 'write to ops@example.org',
        after: 'write to [REDACTED:email]',
      },
    ]);
    expect(withValue.body.changes).toEqual(withNull.body.changes);
  });

  it('serves the predefined types with descriptions', async () => {
    const acct = await newAccount();
    const res = await api(acct.apiToken).get<{
      types: { name: string; description: string; detects: string[]; examples: { matches: string[] } }[];
      scopes: string[];
      levels: string[];
    }>(`/v1/accounts/${acct.accountSid}/redactions/types`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.types.map((t) => t.name)).toEqual([...PREDEFINED_TYPES]);
    for (const t of res.body.types) {
      expect(t.description.length).toBeGreaterThan(3);
      expect(t.examples.matches.length).toBeGreaterThan(0);
    }
    expect(res.body.types.find((t) => t.name === 'password')?.detects).toEqual(['key']);
    expect(res.body).toEqual(JSON.parse(JSON.stringify(sensitiveCatalogue())));
    // The schema's lists are the engine's.
    expect(res.body.scopes).toEqual([...REDACTION_SCOPES]);
    expect(res.body.levels).toEqual([...REDACTION_LEVELS]);
    expect([...APPLY_TO]).toEqual(['key', 'value']);

    const other = await newAccount();
    expect((await api(other.apiToken).get(`/v1/accounts/${acct.accountSid}/redactions/types`)).status).toBe(
      404,
    );
    const noScope = await tokenWithScopes(acct, ['exclusions:read']);
    const forbidden = await api(noScope).get(`/v1/accounts/${acct.accountSid}/redactions/types`);
    expect(forbidden.status).toBe(403);
  });
});

describe('Shape A rules in the SDK settings', () => {
  it('serves enabled, undeleted Shape A rules of the asked redactAt; Shape B answers unchanged', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const sdk = `/v1/buckets/${acct.bucketSid}/sdk?clientId=node-1`;
    const rdc = `/v1/accounts/${acct.accountSid}/redactions`;
    const xcl = `/v1/accounts/${acct.accountSid}/exclusions`;

    // Without Shape A rules the answer has no Shape A keys (existing SDKs see what they saw).
    const bare = await a.get<Record<string, unknown>>(`${sdk}&redactAt=client`);
    expect(bare.status, bare.text).toBe(200);
    expect(Object.keys(bare.body).sort()).toEqual(
      ['bucketSid', 'clientId', 'redactAt', 'redactionRules', 'exclusionRules', 'settings'].sort(),
    );

    const client = (
      await a.post<Rec>(rdc, {
        type: 'email',
        level: 'partial',
        scopes: ['request.query'],
        redactAt: 'client',
      })
    ).body;
    const clientCustom = (
      await a.post<Rec>(rdc, {
        type: 'order-id',
        pattern: 'ORD-[0-9]{6}',
        applyTo: 'value',
        level: 'mask',
        redactAt: 'client',
        environments: ['prod01'],
      })
    ).body;
    const server = (await a.post<Rec>(rdc, { type: 'card', level: 'full' })).body;
    const disabled = (
      await a.post<Rec>(rdc, { type: 'jwt', level: 'full', redactAt: 'client', enabled: false })
    ).body;
    const deleted = (await a.post<Rec>(rdc, { type: 'ssn', level: 'full', redactAt: 'client' })).body;
    expect((await a.delete(`${rdc}/${deleted.sid}`)).status).toBe(200);
    const otherBucket = await a.post<Rec>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'second' });
    expect(otherBucket.status, otherBucket.text).toBe(201);
    const elsewhere = (
      await a.post<Rec>(rdc, {
        type: 'ipv4',
        level: 'full',
        redactAt: 'client',
        buckets: [otherBucket.body.sid],
      })
    ).body;
    const shapeB = (
      await a.post<Rec>(rdc, {
        name: 'pw',
        fieldPath: '$..password',
        redactionType: 'mask',
        redactAt: 'client',
      })
    ).body;
    const crit = (await a.post<Rec>(xcl, { criteria: 'method:OPTIONS', environments: ['prod01'] })).body;
    const critOff = (await a.post<Rec>(xcl, { criteria: 'method:HEAD', enabled: false })).body;
    const exB = (await a.post<Rec>(xcl, { name: 'h', pathPattern: '/health', method: 'GET' })).body;

    const res = await a.get<Record<string, unknown>>(`${sdk}&redactAt=client`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.redactionRules).toEqual([
      { sid: shapeB.sid, field: '$..password', action: 'mask', environments: null },
    ]);
    expect(res.body.sensitiveRules).toEqual([
      {
        sid: client.sid,
        type: 'email',
        pattern: null,
        applyTo: null,
        level: 'partial',
        scopes: ['request.query'],
        environments: null,
      },
      {
        sid: clientCustom.sid,
        type: 'order-id',
        pattern: 'ORD-[0-9]{6}',
        applyTo: 'value',
        level: 'mask',
        scopes: ['*'],
        environments: ['prod01'],
      },
    ]);
    expect(res.body.exclusionRules).toEqual([
      { sid: exB.sid, path: '/health', method: 'GET', statusCode: null, environments: null },
    ]);
    expect(res.body.exclusionCriteria).toEqual([
      { sid: crit.sid, criteria: 'method:OPTIONS', environments: ['prod01'] },
    ]);
    const served = JSON.stringify(res.body);
    for (const sid of [server.sid, disabled.sid, deleted.sid, elsewhere.sid, critOff.sid])
      expect(served).not.toContain(sid);

    const srv = await a.get<{ sensitiveRules: { sid: string }[] }>(`${sdk}&redactAt=server`);
    expect(srv.body.sensitiveRules.map((r) => r.sid)).toEqual([server.sid]);
    const stage = await a.get<{ sensitiveRules: { sid: string }[]; exclusionCriteria?: unknown }>(
      `${sdk}&redactAt=client&environmentSid=stage1`,
    );
    expect(stage.body.sensitiveRules.map((r) => r.sid)).toEqual([client.sid]);
    expect(stage.body).not.toHaveProperty('exclusionCriteria');
    const second = await a.get<{ sensitiveRules: { sid: string }[] }>(
      `/v1/buckets/${otherBucket.body.sid}/sdk?clientId=c&redactAt=client`,
    );
    expect(second.body.sensitiveRules.map((r) => r.sid)).toEqual([
      client.sid,
      clientCustom.sid,
      elsewhere.sid,
    ]);
  });
});

describe('account isolation', () => {
  it('another account can neither see nor change Shape A rules', async () => {
    const owner = await newAccount();
    const other = await newAccount();
    const a = api(owner.apiToken);
    const o = api(other.apiToken);
    const x = (await a.post<Rec>(`/v1/accounts/${owner.accountSid}/exclusions`, { criteria: 'method:GET' }))
      .body;
    const r = (
      await a.post<Rec>(`/v1/accounts/${owner.accountSid}/redactions`, { type: 'email', level: 'full' })
    ).body;

    for (const [kind, sid] of [
      ['exclusions', x.sid],
      ['redactions', r.sid],
    ] as const) {
      // Through the owner's account path: the other token is refused without a hint.
      const own = `/v1/accounts/${owner.accountSid}/${kind}`;
      expect((await o.get(own)).status).toBe(404);
      expect((await o.get(`${own}/${sid}`)).status).toBe(404);
      expect((await o.delete(`${own}/${sid}`)).status).toBe(404);
      const body =
        kind === 'exclusions'
          ? { criteria: 'method:POST', enabled: true }
          : { type: 'jwt', level: 'full', enabled: true };
      expect((await o.put(`${own}/${sid}`, body)).status).toBe(404);
      // Through its own account path: not found, and not listed.
      const mine = `/v1/accounts/${other.accountSid}/${kind}`;
      expect((await o.get(`${mine}/${sid}`)).status).toBe(404);
      expect((await o.put(`${mine}/${sid}`, body)).status).toBe(404);
      expect((await o.delete(`${mine}/${sid}`)).status).toBe(404);
      expect((await o.get<List>(`${mine}?includeDeleted=true`)).body.records).toEqual([]);
    }
    // The other account's SDK view of its own bucket has none of them; the owner's rules are intact.
    const otherSdk = await o.get<Record<string, unknown>>(
      `/v1/buckets/${other.bucketSid}/sdk?clientId=c&redactAt=server`,
    );
    expect(otherSdk.body).not.toHaveProperty('sensitiveRules');
    expect((await o.get(`/v1/buckets/${owner.bucketSid}/sdk?clientId=c&redactAt=server`)).status).toBe(404);
    expect((await a.get<Rec>(`/v1/accounts/${owner.accountSid}/exclusions/${x.sid}`)).body).toEqual(x);
    expect((await a.get<Rec>(`/v1/accounts/${owner.accountSid}/redactions/${r.sid}`)).body).toEqual(r);
  });
});
