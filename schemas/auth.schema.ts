/** Sign-in, sessions, first run, members and invitations (docs/auth.md). */
const email = { type: 'string', format: 'email', maxLength: 320 } as const;
const password = { type: 'string', minLength: 8, maxLength: 256 } as const;
const role = { type: 'string', enum: ['administrator', 'user'] } as const;
const personName = { type: 'string', maxLength: 200 } as const;

export const sessionUserSchema = {
  $id: 'sessionUser',
  type: 'object',
  required: ['sid', 'email', 'firstName', 'lastName'],
  properties: {
    sid: { type: 'string' },
    email: { type: 'string' },
    firstName: { type: 'string' },
    lastName: { type: 'string' },
  },
} as const;

export const signinBodySchema = {
  $id: 'signinBody',
  type: 'object',
  required: ['email', 'password'],
  additionalProperties: false,
  properties: {
    email: { type: 'string', minLength: 1, maxLength: 320 },
    password: { type: 'string', minLength: 1, maxLength: 256 },
  },
} as const;

export const signinResultSchema = {
  $id: 'signinResult',
  type: 'object',
  required: ['sessionToken', 'csrfToken', 'expiresAt', 'accountSid', 'role', 'user'],
  properties: {
    sessionToken: { type: 'string' },
    csrfToken: { type: 'string' },
    expiresAt: { type: 'string', format: 'date-time' },
    accountSid: { type: 'string' },
    role: { type: 'string' },
    user: { $ref: 'sessionUser#' },
  },
} as const;

export const sessionInfoSchema = {
  $id: 'sessionInfo',
  type: 'object',
  required: ['kind', 'accountSid', 'role', 'scopes', 'expiresAt', 'user'],
  properties: {
    kind: { type: 'string', enum: ['session', 'apiToken'] },
    accountSid: { type: 'string' },
    role: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    expiresAt: { type: ['string', 'null'], format: 'date-time' },
    user: { anyOf: [{ $ref: 'sessionUser#' }, { type: 'null' }] },
  },
} as const;

export const setupStatusSchema = {
  $id: 'setupStatus',
  type: 'object',
  required: ['needsSetup', 'signedIn', 'ingestUrl'],
  properties: {
    needsSetup: { type: 'boolean' },
    /** the request carries a valid dashboard session cookie */
    signedIn: { type: 'boolean' },
    ingestUrl: { type: ['string', 'null'] },
  },
} as const;

export const signinMethodsSchema = {
  $id: 'signinMethods',
  type: 'object',
  required: ['password', 'oidc'],
  properties: {
    /** password sign-in is accepted (false under OIDC_ONLY) */
    password: { type: 'boolean' },
    /** single sign-on, when configured */
    oidc: {
      anyOf: [
        {
          type: 'object',
          required: ['name', 'startUrl', 'refusals'],
          properties: {
            /** "Sign in with <name>" */
            name: { type: 'string' },
            /** where the button goes (`?next=<path>` opens that page after sign-in) */
            startUrl: { type: 'string' },
            /** the message of each `sso_error` reason the sign-in page is sent back with */
            refusals: { type: 'object', additionalProperties: { type: 'string' } },
          },
        },
        { type: 'null' },
      ],
    },
  },
} as const;

export const setupBodySchema = {
  $id: 'setupBody',
  type: 'object',
  required: ['name', 'email', 'password'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    email,
    password,
    accountName: { type: 'string', minLength: 1, maxLength: 200 },
  },
} as const;

export const memberSchema = {
  $id: 'member',
  type: 'object',
  required: ['sid', 'email', 'firstName', 'lastName', 'role', 'status', 'createdAt', 'lastSignInAt'],
  properties: {
    sid: { type: 'string' },
    email: { type: 'string' },
    firstName: { type: 'string' },
    lastName: { type: 'string' },
    role: { type: 'string' },
    status: { type: 'string', enum: ['active', 'invited'] },
    createdAt: { type: 'string', format: 'date-time' },
    lastSignInAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const memberListSchema = {
  $id: 'memberList',
  type: 'object',
  required: ['hasMore', 'users'],
  properties: { hasMore: { type: 'boolean' }, users: { type: 'array', items: { $ref: 'member#' } } },
} as const;

export const inviteBodySchema = {
  $id: 'inviteBody',
  type: 'object',
  required: ['email', 'role'],
  additionalProperties: false,
  properties: { email, role, firstName: personName, lastName: personName },
} as const;

export const inviteResultSchema = {
  $id: 'inviteResult',
  type: 'object',
  required: ['user', 'inviteUrl', 'inviteToken', 'expiresAt'],
  properties: {
    user: { $ref: 'member#' },
    inviteUrl: { type: 'string' },
    inviteToken: { type: 'string' },
    expiresAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const memberUpdateSchema = {
  $id: 'memberUpdate',
  type: 'object',
  required: ['role'],
  additionalProperties: false,
  properties: { role },
} as const;

export const inviteInfoSchema = {
  $id: 'inviteInfo',
  type: 'object',
  required: ['email', 'accountName', 'role', 'expiresAt'],
  // Whether the email already has a Tapline user is not said: the link is in the inviter's hands,
  // and the answer would tell any administrator who uses Tapline (docs/auth.md "Invitations").
  properties: {
    email: { type: 'string' },
    accountName: { type: 'string' },
    role: { type: 'string' },
    expiresAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const inviteAcceptSchema = {
  $id: 'inviteAccept',
  type: 'object',
  required: ['password'],
  additionalProperties: false,
  properties: { password, firstName: personName, lastName: personName },
} as const;

export const AUTH_SCHEMAS = [
  sessionUserSchema,
  signinBodySchema,
  signinResultSchema,
  sessionInfoSchema,
  setupStatusSchema,
  signinMethodsSchema,
  setupBodySchema,
  memberSchema,
  memberListSchema,
  inviteBodySchema,
  inviteResultSchema,
  memberUpdateSchema,
  inviteInfoSchema,
  inviteAcceptSchema,
] as const;
