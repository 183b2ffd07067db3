import type { Step } from '../pipeline.js';
import { endpointStep } from './endpoint.step.js';
import { exclusionsStep } from './exclusions.step.js';
import { identifyStep } from './identify.step.js';
import { redactStep } from './redact.step.js';
import { triggersStep } from './triggers.step.js';

/**
 * The processor's steps in order. Exclusions first (an excluded record costs nothing more),
 * consumer identification before redaction (a redacted credential header still identifies),
 * redaction before anything else reads the content, triggers last so action jobs see the final,
 * redacted record.
 */
export const PROCESSOR_STEPS: readonly Step[] = [
  exclusionsStep,
  identifyStep,
  redactStep,
  endpointStep,
  triggersStep,
];
