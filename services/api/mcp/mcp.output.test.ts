import { describe, expect, it } from 'vitest';
import { MAX_OUTPUT_CHARS, fitList, jsonText, type Truncation } from './mcp.output.js';

describe('MCP output cap', () => {
  it('returns a list that fits unchanged', () => {
    const out = { hits: [1, 2, 3], truncated: false };
    expect(fitList(out, 'hits', 'more')).toBe(out);
  });

  it('cuts a list to the most items that fit and says how to get the rest', () => {
    const hits = Array.from({ length: 100 }, (_, i) => ({ i, pad: 'x'.repeat(500) }));
    const out = fitList({ hits, truncated: false as Truncation | false }, 'hits', 'page on');
    const text = JSON.stringify(out);
    expect(text.length).toBeLessThanOrEqual(MAX_OUTPUT_CHARS);
    expect(out.hits.length).toBeGreaterThan(30);
    // One more item would not fit.
    expect(JSON.stringify({ ...out, hits: hits.slice(0, out.hits.length + 1) }).length).toBeGreaterThan(
      MAX_OUTPUT_CHARS,
    );
    expect(out.truncated).toEqual({
      field: 'hits',
      shown: out.hits.length,
      total: 100,
      reason: 'size',
      howToGetMore: 'page on',
    });
  });

  it('keeps the total of a list already cut by a limit', () => {
    const hits = Array.from({ length: 60 }, () => 'y'.repeat(500));
    const prior: Truncation = { field: 'hits', shown: 60, total: 250, reason: 'limit', howToGetMore: 'x' };
    const out = fitList({ hits, truncated: prior as Truncation | false }, 'hits', 'lower limit');
    expect(out.truncated).toMatchObject({ reason: 'size', total: 250, howToGetMore: 'lower limit' });
  });

  it('cuts long strings a tool left whole, stating their length', () => {
    const text = jsonText({ body: 'z'.repeat(50_000), sid: 'req_1' });
    expect(text.length).toBeLessThanOrEqual(MAX_OUTPUT_CHARS);
    const parsed = JSON.parse(text) as { body: string; sid: string; outputCut: string };
    expect(parsed.sid).toBe('req_1');
    expect(parsed.body).toContain('50000 characters in full');
    expect(parsed.outputCut).toContain('cut');
  });

  it('answers a short note when nothing else brings it under the cap', () => {
    const text = jsonText({ many: Array.from({ length: 5000 }, (_, i) => `value-${i}`) });
    expect(text.length).toBeLessThanOrEqual(MAX_OUTPUT_CHARS);
    expect(JSON.parse(text)).toEqual({ outputCut: expect.stringContaining('narrow') });
  });
});
