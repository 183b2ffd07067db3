/**
 * The redactions every new account starts with (docs/sensitive-data.md "Secure by default"), and
 * what the dashboard's "Add the recommended redactions" adds back: sensitive-data rules by data type,
 * applied by Tapline (server) to every bucket and environment, secrets in full and card numbers
 * but their last 4 digits. `password` covers fields and headers named like a secret (password,
 * secret, token, api key, cookie, session id); `authorization` the Authorization header and
 * Bearer/Basic credentials anywhere. Each is an ordinary rule afterwards: listed, editable,
 * removable.
 */
export const RECOMMENDED_REDACTIONS: readonly {
  type: 'authorization' | 'password' | 'api_key' | 'jwt' | 'card';
  level: 'full' | 'partial';
  description: string;
}[] = [
  { type: 'authorization', level: 'full', description: 'Authorization headers and credentials' },
  { type: 'password', level: 'full', description: 'Passwords, secrets, tokens and cookies' },
  { type: 'api_key', level: 'full', description: 'API keys' },
  { type: 'jwt', level: 'full', description: 'JSON Web Tokens' },
  { type: 'card', level: 'partial', description: 'Card numbers (last 4 digits kept)' },
];
