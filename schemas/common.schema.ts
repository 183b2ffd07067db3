/** Shared JSON Schema pieces. Every schema with an `$id` is registered once (schemas/index.ts). */

type KnownKeys<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: 0 };

/**
 * `T` without the `[key: string]: unknown` that json-schema-to-ts gives an object schema with
 * properties and no `additionalProperties`: a reply is serialised with the declared properties
 * only, and code reads only those, so an unknown key is a type error. A map (`additionalProperties`
 * without `properties`) keeps its index signature.
 */
export type Closed<T> = T extends readonly (infer U)[]
  ? Closed<U>[]
  : T extends object
    ? [KnownKeys<T>] extends [never]
      ? T
      : { [K in keyof T as string extends K ? never : number extends K ? never : K]: Closed<T[K]> }
    : T;

export const timestamp = { type: 'string', format: 'date-time' } as const;
export const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
export const environmentSid = { type: 'string', pattern: '^[a-z0-9]{6}$' } as const;

export const errorSchema = {
  $id: 'error',
  type: 'object',
  required: ['success', 'error'],
  properties: {
    success: { type: 'boolean', const: false },
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        details: { type: 'object', additionalProperties: true },
      },
    },
  },
} as const;

export const deletedSchema = {
  $id: 'deleted',
  type: 'object',
  required: ['sid', 'deleted'],
  properties: { sid: { type: 'string' }, deleted: { type: 'boolean' } },
} as const;

/** `{hasMore, records}` around an item schema referenced by `$id`. */
export function listOf<const Id extends string>(id: Id) {
  return {
    type: 'object',
    required: ['hasMore', 'records'],
    properties: { hasMore: { type: 'boolean' }, records: { type: 'array', items: { $ref: `${id}#` } } },
  } as const;
}

/**
 * A keyset cursor of a list ordered by time then sid (the request list's `cursor` and
 * `nextCursor`, MCP `search_requests`): `<ISO 8601 UTC time with milliseconds>|<sid>`, the
 * position of the last record of a page. The next page holds the records strictly after it in the
 * list's order, so records sharing a millisecond are neither skipped nor repeated (docs/search.md).
 */
export const timeCursorSchema = {
  type: 'string',
  maxLength: 128,
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z\\|[A-Za-z0-9_]{1,100}$',
  description:
    'Where the previous page ended (its nextCursor): `<createdAt>|<sid>`. The page holds the records after it in the list order.',
} as const;

/**
 * Query string of list endpoints: the interface (docs/search.md) (`page`, `limit`, `sort`, `order`, and `start_date` /
 * `end_date`, inclusive bounds of the records' `createdAt`; the events list reads them as its
 * time window instead, docs/api.md).
 */
export function listQuery<const Sorts extends readonly string[]>(sorts: Sorts, defaultSort: Sorts[number]) {
  return {
    type: 'object',
    properties: {
      page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
      sort: { type: 'string', enum: sorts, default: defaultSort },
      order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
      start_date: { type: 'string', format: 'date-time' },
      end_date: { type: 'string', format: 'date-time' },
    },
  } as const;
}

/** One sid in a path: a string of at most 64 characters. */
const pathSid = { type: 'string', maxLength: 64 } as const;

/** The params schema of a path whose parameters are all sids (`sidParams('accountSid', 'bucketSid')`). */
export function sidParams<const K extends string>(...names: K[]) {
  return {
    type: 'object',
    required: names,
    properties: Object.fromEntries(names.map((n) => [n, pathSid])) as { readonly [P in K]: typeof pathSid },
  } as const;
}

export const accountParams = sidParams('accountSid');
