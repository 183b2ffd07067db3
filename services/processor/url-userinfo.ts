/**
 * The password of a URL's userinfo (`https://user:secret@api.example.com/…`) or of a host sent with one
 * (`user:secret@api.example.com`): where it lies in the text, for the redactions that hide it (docs/rules.md,
 * docs/sensitive-data.md). Shared by field redactions (redaction.ts), sensitive-data redactions
 * (sensitive/engine.ts) and the Node.js SDK's client-side rules.
 */

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\//;

/**
 * `[start, end)` of the userinfo password in `text`, or null when there is none (no `@` in the
 * authority, no `:` before it, or an empty password). `host`: the text starts with the authority
 * (`request.host`); otherwise it must start with a scheme and `//` (`request.url`). The authority
 * ends at the first `/`, `?` or `#`; its last `@` ends the userinfo, as URL parsers read it.
 */
export function userinfoPassword(text: string, host: boolean): [number, number] | null {
  if (!text.includes('@')) return null;
  let start = 0;
  if (!host) {
    const m = SCHEME.exec(text);
    if (!m) return null;
    start = m[0].length;
  }
  let end = start;
  while (end < text.length) {
    const c = text.charCodeAt(end);
    if (c === 0x2f || c === 0x3f || c === 0x23) break;
    end++;
  }
  if (end === start) return null;
  const at = text.lastIndexOf('@', end - 1);
  if (at < start) return null;
  const colon = text.indexOf(':', start);
  if (colon < 0 || colon + 1 >= at) return null;
  return [colon + 1, at];
}

/**
 * `text` with its userinfo password (decoded from percent-encoding) replaced by `apply(password)`,
 * percent-encoded again; `apply` returning null removes the password and its `:`, keeping the user
 * name. The same string when there is no password.
 */
export function replaceUserinfoPassword(
  text: string,
  host: boolean,
  apply: (password: string) => string | null,
): string {
  const span = userinfoPassword(text, host);
  if (!span) return text;
  const raw = text.slice(span[0], span[1]);
  let password: string;
  try {
    password = decodeURIComponent(raw);
  } catch {
    password = raw;
  }
  const replaced = apply(password);
  if (replaced === null) return text.slice(0, span[0] - 1) + text.slice(span[1]);
  return text.slice(0, span[0]) + encodeURIComponent(replaced) + text.slice(span[1]);
}
