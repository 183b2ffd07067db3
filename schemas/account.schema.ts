/** The caller's account as the dashboard's account page shows it (docs/auth.md, "The account"). */
import { timestamp } from './common.schema.js';

export const ACCOUNT_PLANS = ['standard', 'pro', 'enterprise'] as const;

export const accountSchema = {
  $id: 'account',
  type: 'object',
  required: ['sid', 'name', 'plan', 'createdAt', 'rateLimit', 'environments'],
  properties: {
    sid: { type: 'string' },
    name: { type: 'string' },
    plan: { type: 'string', enum: ACCOUNT_PLANS },
    createdAt: timestamp,
    rateLimit: {
      type: 'object',
      description:
        'The management API’s hourly allowance of the account (docs/auth.md) and its use in the current ' +
        'window, this request included, as counted by the process that answers',
      required: ['limit', 'windowSeconds', 'used', 'resetAt'],
      properties: {
        limit: { type: 'integer', description: '/v1 requests per window' },
        windowSeconds: { type: 'integer' },
        used: { type: 'integer', minimum: 0 },
        resetAt: { type: ['string', 'null'], format: 'date-time', description: 'when the window ends' },
      },
    },
    environments: {
      type: 'array',
      description: 'Environments seen in stored traffic within retention, most recent first',
      items: {
        type: 'object',
        required: ['sid', 'lastSeenAt', 'count'],
        properties: {
          sid: { type: 'string' },
          lastSeenAt: timestamp,
          count: { type: 'integer', description: 'requests stored in that environment' },
        },
      },
    },
  },
} as const;

export const accountUpdateSchema = {
  $id: 'accountUpdate',
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' } },
} as const;

export const ACCOUNT_SCHEMAS = [accountSchema, accountUpdateSchema] as const;
