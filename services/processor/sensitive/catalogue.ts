import { DETECTORS, PREDEFINED_TYPES, type PredefinedType } from './detectors.js';
import { LEVELS, SENSITIVE_SCOPES } from './types.js';

/**
 * The catalogue of predefined types, as the API serves it (`GET` on the predefined-types route):
 * each type with what it finds, how it is validated, what `partial` keeps, and examples of what it
 * matches and what it does not (test/unit/sensitive-corpus.test.ts checks every example against the
 * detector).
 */

export interface PredefinedTypeInfo {
  name: PredefinedType;
  description: string;
  /** `value`: found inside any text; `key`: a field's name designates it; both for `authorization` */
  detects: ('value' | 'key')[];
  validation: string;
  partial: string;
  examples: { matches: string[]; nonMatches: string[] };
}

export interface SensitiveCatalogue {
  types: PredefinedTypeInfo[];
  scopes: string[];
  levels: string[];
}

export function predefinedTypes(): PredefinedTypeInfo[] {
  return PREDEFINED_TYPES.map((name) => {
    const d = DETECTORS[name];
    const detects: ('value' | 'key')[] = [];
    if (d.patterns.length) detects.push('value');
    if (d.key) detects.push('key');
    return {
      name,
      description: d.description,
      detects,
      validation: d.validation,
      partial: d.partial,
      examples: { matches: [...d.examples.matches], nonMatches: [...d.examples.nonMatches] },
    };
  });
}

export function sensitiveCatalogue(): SensitiveCatalogue {
  return { types: predefinedTypes(), scopes: [...SENSITIVE_SCOPES, '*'], levels: [...LEVELS] };
}
