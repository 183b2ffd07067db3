import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * Tool results are JSON text sized for a model's context: no result is longer than this many
 * characters. Lists are cut first (saying so and how to get the rest); long strings after that.
 */
export const MAX_OUTPUT_CHARS = 20_000;

/** How a list was cut: by the caller's limit or by the output size cap, and how to get more. */
export interface Truncation {
  field: string;
  shown: number;
  /** total items when known */
  total: number | null;
  reason: 'limit' | 'size';
  howToGetMore: string;
}

const size = (v: unknown): number => JSON.stringify(v).length;

/**
 * Cuts `out[field]` from the end until the whole object fits in MAX_OUTPUT_CHARS and records the
 * cut in `out.truncated` (kept when the list was already cut by a limit, with the shown count
 * updated). Returns `out` unchanged when it fits.
 */
export function fitList<T extends Record<string, unknown>>(
  out: T,
  field: keyof T & string,
  howToGetMore: string,
  total: number | null = null,
): T {
  if (size(out) <= MAX_OUTPUT_CHARS) return out;
  const list = out[field];
  if (!Array.isArray(list)) return out;
  const prior = out.truncated as Truncation | false | undefined;
  const build = (n: number): T => ({
    ...out,
    [field]: list.slice(0, n),
    truncated: {
      field,
      shown: n,
      total: total ?? (prior ? prior.total : list.length),
      reason: 'size',
      howToGetMore,
    } satisfies Truncation,
  });
  // The largest n that fits: size grows with n, so a binary search finds it.
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (size(build(mid)) <= MAX_OUTPUT_CHARS) lo = mid;
    else hi = mid - 1;
  }
  return build(lo);
}

/** Every string longer than `max` cut to `max` characters, with the original length stated. */
function cutStrings(v: unknown, max: number): unknown {
  if (typeof v === 'string')
    return v.length > max ? `${v.slice(0, max)}… [cut: ${v.length} characters in full]` : v;
  if (Array.isArray(v)) return v.map((x) => cutStrings(x, max));
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cutStrings(x, max)]));
  return v;
}

/**
 * The JSON text of a tool result. A value still over the cap (long strings the tool did not cut)
 * has its longest strings shortened until it fits; `outputCut` says so.
 */
export function jsonText(value: unknown): string {
  let text = JSON.stringify(value);
  // Not below 250 characters: sids, dates and paths stay whole.
  for (let max = 2000; text.length > MAX_OUTPUT_CHARS && max >= 250; max = Math.floor(max / 2)) {
    const cut = cutStrings(value, max);
    text = JSON.stringify(
      cut && typeof cut === 'object' && !Array.isArray(cut)
        ? { ...cut, outputCut: `strings longer than ${max} characters were cut to fit the output size` }
        : cut,
    );
  }
  if (text.length > MAX_OUTPUT_CHARS)
    text = JSON.stringify({
      outputCut: 'The result is too large to return; narrow the request (a shorter range, a lower limit).',
    });
  return text;
}

export const json = (value: unknown): CallToolResult => ({
  content: [{ type: 'text', text: jsonText(value) }],
});

export const failure = (message: string, details: Record<string, unknown> = {}): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text: jsonText({ error: message, details }) }],
});
