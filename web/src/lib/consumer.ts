/** The search term for one consumer id: bare when it is a plain word, else quoted (docs/search.md). */
export function consumerTerm(id: string): string {
  return /^[A-Za-z0-9_.:-]+$/.test(id) ? `consumer:${id}` : `consumer:"${id.replace(/[\\"]/g, '\\$&')}"`;
}

/** A stream search narrowed to the consumer filter: the consumer's term before the person's own. */
export function withConsumer(q: string, consumer: string | null | undefined): string {
  return [consumer ? consumerTerm(consumer) : '', q].filter(Boolean).join(' ');
}
