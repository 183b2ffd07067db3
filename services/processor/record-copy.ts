/**
 * A shallow copy of `value` with `fields` set over it: how the processor's steps change a record,
 * or one of its parts, without touching the object they were given.
 *
 * The copy is made with `Object.assign` onto a new object, not with a spread (`{...value}`).
 * Records come in many layouts, one per set of optional fields. When a spread's call site has
 * seen many layouts, V8 gives each copy a hidden class that no other object shares. Every later
 * read of that copy then misses its inline caches. The row mapper alone reads about twenty fields
 * of each record. `Object.assign` adds the properties one by one along the shared transitions, so
 * copies of one layout share a class, as parsed records do (measured in bench/README.md).
 */
export function copyWith<T extends object>(value: T, fields?: Partial<T>): T {
  return fields ? Object.assign({}, value, fields) : Object.assign({}, value);
}
