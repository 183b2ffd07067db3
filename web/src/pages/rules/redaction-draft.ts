import {
  isSensitiveRedaction,
  type AnyRedaction,
  type Redaction,
  type RedactionInput,
} from '../../api/rules';
import { environmentsError, parseEnvironments } from './rule-preview';
import { sensitiveRedactionLabel } from './content-rules';

// A field redaction as the form holds it, its API body and its checks, and the labels the list shows.

export type RedactionType = RedactionInput['redactionType'];

export interface Draft {
  name: string;
  description: string;
  fieldPath: string;
  redactionType: RedactionType;
  replacementValue: string;
  redactAt: 'server' | 'client';
  buckets: string[];
  environments: string;
  isActive: boolean;
}

export const EMPTY: Draft = {
  name: '',
  description: '',
  fieldPath: '',
  redactionType: 'mask',
  replacementValue: '',
  redactAt: 'server',
  buckets: [],
  environments: '',
  isActive: true,
};

export function draftOf(x: Redaction): Draft {
  return {
    name: x.name,
    description: x.description,
    fieldPath: x.fieldPath,
    redactionType: x.redactionType,
    replacementValue: x.replacementValue ?? '',
    redactAt: x.redactAt,
    buckets: x.buckets ?? [],
    environments: (x.environments ?? []).join(', '),
    isActive: x.isActive,
  };
}

export function bodyOf(d: Draft): RedactionInput & { isActive: boolean } {
  return {
    name: d.name.trim(),
    description: d.description,
    fieldPath: d.fieldPath.trim(),
    redactionType: d.redactionType,
    replacementValue: d.redactionType === 'replace' ? d.replacementValue : null,
    redactAt: d.redactAt,
    buckets: d.buckets.length ? d.buckets : null,
    environments: parseEnvironments(d.environments),
    isActive: d.isActive,
  };
}

/**
 * The API's schema checks (schemas/rules.schema.ts). The field path's own syntax is checked by the
 * API (its parser is the processor's); its message shows under the field.
 */
export function validate(d: Draft): Record<string, string> {
  const e: Record<string, string> = {};
  if (!d.name.trim()) e.name = 'is required';
  else if (d.name.length > 200) e.name = 'must be at most 200 characters';
  if (d.description.length > 2000) e.description = 'must be at most 2000 characters';
  const p = d.fieldPath.trim();
  if (!p) e.fieldPath = 'is required';
  else if (!p.startsWith('$') || p.length < 2)
    e.fieldPath = 'must start with $, e.g. $.request.body.password';
  else if (p.length > 1024) e.fieldPath = 'must be at most 1024 characters';
  if (d.redactionType === 'replace' && d.replacementValue.length > 1000)
    e.replacementValue = 'must be at most 1000 characters';
  const env = environmentsError(d.environments);
  if (env) e.environments = env;
  return e;
}

/**
 * The name lists and notices show: a field rule's name, a sensitive-data rule's description or type and
 * level.
 */
export const labelOf = (x: AnyRedaction): string =>
  isSensitiveRedaction(x) ? sensitiveRedactionLabel(x) : x.name;
export const activeOf = (x: AnyRedaction): boolean => (isSensitiveRedaction(x) ? x.enabled : x.isActive);
