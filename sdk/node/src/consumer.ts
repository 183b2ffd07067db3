import type { IncomingMessage } from 'node:http';
import type { TaplineCore } from './client.js';
import type { ConsumerInfo } from './types.js';

/** The consumer `identify` set on a request. */
const CONSUMER = Symbol.for('tapline.consumer');

type Identified = IncomingMessage & { [CONSUMER]?: ConsumerInfo };

/** Marks `req` as made by `consumer` (Tapline.identify); a value the schema would refuse is ignored. */
export function identifyRequest(req: IncomingMessage, consumer: unknown): void {
  const c = cleanConsumer(consumer);
  if (c) (req as Identified)[CONSUMER] = c;
}

/** The consumer in the record schema's bounds (id 1-256 characters), or undefined. */
function cleanConsumer(v: unknown): ConsumerInfo | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { id, name, group } = v as Record<string, unknown>;
  const sid = typeof id === 'number' ? String(id) : id;
  if (typeof sid !== 'string' || sid === '') return undefined;
  const out: ConsumerInfo = { id: sid.slice(0, 256) };
  if (typeof name === 'string') out.name = name.slice(0, 256);
  if (typeof group === 'string') out.group = group.slice(0, 256);
  return out;
}

/** The request's consumer: the one `identify` set, else the `consumer` option's answer. */
export function consumerOf(core: TaplineCore, req: IncomingMessage): ConsumerInfo | undefined {
  const set = (req as Identified)[CONSUMER];
  if (set) return set;
  const fn = core.opts.consumer;
  if (!fn) return undefined;
  try {
    return cleanConsumer(fn(req));
  } catch (err) {
    core.internalError(err);
    return undefined;
  }
}
