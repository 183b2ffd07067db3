import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import { createRequire } from 'node:module';
import { ALL_SCHEMAS } from '../../schemas/index.js';
import { describeAjvError } from './validation-messages.js';

// NOTE: ajv-formats is CJS whose typings do not resolve as callable under NodeNext; require() it.
const addFormats = createRequire(import.meta.url)('ajv-formats') as (ajv: Ajv) => Ajv;

/**
 * An ajv instance with every schema registered (one per process through `ajv()`; validators are
 * compiled once). `discriminator`: honour OpenAPI's `discriminator` on a `oneOf` (the branch picked by the named
 * property, so a refusal reports only that branch's errors).
 */
export function createAjv(
  opts: { coerceTypes?: boolean | 'array'; removeAdditional?: boolean; discriminator?: boolean } = {},
): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: true,
    coerceTypes: opts.coerceTypes ?? false,
    removeAdditional: opts.removeAdditional ?? false,
    discriminator: opts.discriminator ?? false,
    strict: false,
  });
  addFormats(ajv);
  for (const schema of ALL_SCHEMAS) ajv.addSchema(schema);
  return ajv;
}

let shared: Ajv | undefined;
export function ajv(): Ajv {
  shared ??= createAjv();
  return shared;
}

export function validator<T = unknown>(id: string): ValidateFunction<T> {
  const fn = ajv().getSchema<T>(id);
  if (!fn) throw new Error(`schema ${id} is not registered`);
  return fn;
}

/** ajv errors as `{field: phrase}` for the error envelope's `details`, each phrase in words (validation-messages.ts). */
export function errorDetails(errors: ErrorObject[] | null | undefined, root = ''): Record<string, string> {
  const details: Record<string, string> = {};
  for (const e of errors ?? []) {
    let field = (root + e.instancePath).replace(/^\//, '').replaceAll('/', '.') || '(body)';
    if (e.keyword === 'required')
      field = [field === '(body)' ? '' : field, e.params.missingProperty].filter(Boolean).join('.');
    if (e.keyword === 'additionalProperties') {
      field = [field === '(body)' ? '' : field, e.params.additionalProperty].filter(Boolean).join('.');
      details[field] = 'is not a known field';
      continue;
    }
    details[field] ??= describeAjvError(e);
  }
  return details;
}
