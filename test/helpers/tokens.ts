/**
 * `tokenWithScopes(acct, scopes)`: an API token of `acct` holding exactly `scopes` (403 tests).
 * One implementation only: scoped-token.ts inserts the row with hashToken/newTokenValue.
 */
export { scopedToken as tokenWithScopes } from './scoped-token.js';
