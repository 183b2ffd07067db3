/**
 * One resource of each kind in an account, created through the public API, so that lists are not
 * empty and path parameters can name real resources. Shared by `npm run fuzz` and the hostile-input
 * and security tests. Only plain `fetch`: no vitest, so the fuzz launcher can import it too.
 */

export const SEED_ENVIRONMENT = 'fuzz01';

export interface SeededAccount {
  accountSid: string;
  bucketSid: string;
  token: string;
  /** full value of the MCP token `params.mcpTokenSid` (returned once, at creation) */
  mcpToken: string;
  /** path parameter name -> a real resource of the account (the ones reads and updates use) */
  params: Record<string, string>;
  /** path parameter name -> a second resource of the same kind, for DELETE operations */
  spare: Record<string, string>;
}

async function call(
  method: string,
  url: string,
  token: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`seed ${method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Creates two of each resource (a bucket, exclusion, redaction, event, stream view, workflow, MCP
 * token, API token, SLO, endpoint template rule) and, when `ingestUrl` is given, a few captured requests (waits until readable).
 */
export async function seedResources(
  urls: { apiUrl: string; ingestUrl?: string },
  acct: { accountSid: string; bucketSid: string; token: string },
): Promise<SeededAccount> {
  const { token, bucketSid } = acct;
  const a = `${urls.apiUrl}/v1/accounts/${acct.accountSid}`;
  const env = SEED_ENVIRONMENT;
  const create = async (suffix: string, body: unknown) =>
    String((await call('POST', `${a}/${suffix}`, token, body)).sid);
  const two = async (f: (i: number) => Promise<string>): Promise<[string, string]> => [
    await f(0),
    await f(1),
  ];

  const buckets = await two((i) => create('buckets', { name: `seed bucket ${i}` }));
  const exclusions = await two((i) =>
    create('exclusions', { name: `x${i}`, pathPattern: '/health*', method: 'GET', buckets: [bucketSid] }),
  );
  const redactions = await two((i) =>
    create('redactions', {
      name: `r${i}`,
      fieldPath: '$.password',
      redactionType: 'mask',
      buckets: [bucketSid],
    }),
  );
  const events = await two((i) => create('events', { type: 'deployment', name: `deploy ${i}` }));
  const views = await two((i) =>
    create(`buckets/${bucketSid}/streamViews`, {
      name: `view ${i}`,
      criteria: 'status:>=500',
      icon: 'alert',
    }),
  );
  const workflows = await two((i) =>
    create(`environments/${env}/buckets/${bucketSid}/workflows`, {
      name: `wf ${i}`,
      trigger: { type: 'error', conditions: [{ statusCode: 500 }] },
      actions: [{ type: 'webhook', config: { url: 'https://example.test/hook', method: 'POST' } }],
      isActive: false,
    }),
  );
  let mcpToken = '';
  const mcpTokens = await two(async (i) => {
    const created = await call('POST', `${a}/mcpTokens`, token, { name: `mcp ${i}`, environmentSid: env });
    if (i === 0) mcpToken = String(created.token);
    return String(created.sid);
  });
  const apiTokens = await two((i) => create('apiTokens', { name: `t${i}`, scopes: ['buckets:read'] }));
  const slos = await two((i) =>
    create('slos', {
      name: `slo ${i}`,
      bucketSid,
      sli: { kind: 'availability' },
      objective: 99.9,
      windowDays: 30,
    }),
  );

  const templates = await two((i) =>
    create(`buckets/${bucketSid}/endpointTemplates`, { pattern: `/seed-coupons-${i}/{code}` }),
  );

  let requestSid = `req_${'A'.repeat(27)}`;
  let spareRequestSid = `req_${'B'.repeat(27)}`;
  if (urls.ingestUrl) {
    // NOTE: the ingest listener may start listening a moment after the API answers /readyz.
    const up = Date.now() + 60_000;
    while (
      !(await fetch(`${urls.ingestUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (Date.now() > up) throw new Error(`ingest listener ${urls.ingestUrl} does not answer`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const now = Date.now();
    const records = Array.from({ length: 4 }, (_, i) => ({
      environmentSid: env,
      createdAt: new Date(now - 1000 * (i + 1)).toISOString(),
      request: { method: 'GET', path: `/seed/${i}`, host: 'api.example.test', headers: {}, queryString: {} },
      response: { statusCode: i === 0 ? 500 : 200, headers: {}, size: 10 },
      timings: { duration: 5 + i },
    }));
    await call('POST', `${urls.ingestUrl}/v1/buckets/${bucketSid}/ingest`, token, { records });
    const deadline = Date.now() + 90_000;
    for (;;) {
      const list = await call('GET', `${a}/buckets/${bucketSid}/requests?limit=10`, token);
      const sids = (list.records as { sid: string }[]).map((r) => r.sid);
      if (sids.length >= records.length) {
        requestSid = sids[0]!;
        spareRequestSid = sids[1]!;
        break;
      }
      if (Date.now() > deadline) throw new Error('seeded requests did not become readable');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  return {
    ...acct,
    mcpToken,
    params: {
      accountSid: acct.accountSid,
      bucketSid,
      environmentSid: env,
      exclusionSid: exclusions[0],
      redactionSid: redactions[0],
      eventSid: events[0],
      streamViewSid: views[0],
      workflowSid: workflows[0],
      mcpTokenSid: mcpTokens[0],
      apiTokenSid: apiTokens[0],
      sloSid: slos[0],
      endpointTemplateSid: templates[0],
      requestSid,
    },
    spare: {
      bucketSid: buckets[1],
      exclusionSid: exclusions[1],
      redactionSid: redactions[1],
      eventSid: events[1],
      streamViewSid: views[1],
      workflowSid: workflows[1],
      mcpTokenSid: mcpTokens[1],
      apiTokenSid: apiTokens[1],
      sloSid: slos[1],
      endpointTemplateSid: templates[1],
      requestSid: spareRequestSid,
    },
  };
}
