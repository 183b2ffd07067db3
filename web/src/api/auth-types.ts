/**
 * Sign-in, session and member shapes of the authentication endpoints (docs/auth.md), derived from
 * the API's schemas in `schemas/auth.schema.ts` with json-schema-to-ts (types only: nothing of
 * `schemas/` reaches the bundle).
 */
import type { FromSchema } from 'json-schema-to-ts';
import type {
  inviteInfoSchema,
  inviteResultSchema,
  memberSchema,
  setupStatusSchema,
  sessionInfoSchema,
  sessionUserSchema,
  signinMethodsSchema,
  signinResultSchema,
} from '../../../schemas/auth.schema';

type WithUser = { references: [typeof sessionUserSchema] };

export type SessionUser = FromSchema<typeof sessionUserSchema>;
export type SignInResult = FromSchema<typeof signinResultSchema, WithUser>;
export type Session = FromSchema<typeof sessionInfoSchema, WithUser>;
export type Member = FromSchema<typeof memberSchema>;
export type InviteResult = FromSchema<typeof inviteResultSchema, { references: [typeof memberSchema] }>;
export type InviteInfo = FromSchema<typeof inviteInfoSchema>;
export type SetupStatus = FromSchema<typeof setupStatusSchema>;
export type SigninMethods = FromSchema<typeof signinMethodsSchema>;
