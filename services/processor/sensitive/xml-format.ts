import { fullText, keyMatch, redactWhole, scanText, type KeyMatcher, type Plan } from './matchers.js';
import { applyEdits, isWs, type Hit } from './json-format.js';

const XML_ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeXml(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9A-Fa-f]{1,6}|#[0-9]{1,7}|lt|gt|amp|quot|apos);/g, (m, e: string) => {
    if (e[0] !== '#') return XML_ENTITIES[e]!;
    const cp = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
  });
}

/** Escapes `&` and `<` (and the attribute's quote); `&name;` entities of a DTD are kept as they are. */
function encodeXml(s: string, quote: string | null): string {
  let out = s
    .replace(/&(?![A-Za-z_][A-Za-z0-9._-]{0,31};)/g, '&amp;')
    .replace(/&(lt|gt|amp|quot|apos);/g, '&amp;$1;');
  out = out.replace(/</g, '&lt;').replace(/>/g, '&gt;');
  if (quote === '"') out = out.replace(/"/g, '&quot;');
  else if (quote === "'") out = out.replace(/'/g, '&apos;');
  return out;
}

const XML_NAME = /[A-Za-z_:\u00C0-\uFFFF][A-Za-z0-9_.:\u00B7\u00C0-\uFFFF-]{0,255}/y;

function xmlKeyMatch(plan: Plan, name: string): KeyMatcher | null {
  if (plan.keys.length === 0) return null;
  const direct = keyMatch(plan, name);
  if (direct) return direct;
  const colon = name.indexOf(':');
  return colon >= 0 ? keyMatch(plan, name.slice(colon + 1)) : null;
}

interface XmlFrame {
  name: string;
  /** the key matcher of this element or of an enclosing one: its text is redacted whole */
  claimed: KeyMatcher | null;
}

/**
 * Redacts an XML document with a tokenizer-level scan: text nodes and CDATA sections are scanned
 * (decoded), attribute values likewise, an element or attribute whose name a key matcher claims has
 * its text (all text inside the element) redacted whole. Only the changed spans are rewritten.
 * Returns null when the text is not a well-formed document (one root, tags balanced, attributes
 * quoted): the caller scans it as text.
 */
export function redactXml(text: string, plan: Plan, hit: Hit): string | null {
  const n = text.length;
  const edits: [number, number, string][] = [];
  const stack: XmlFrame[] = [];
  let rootSeen = false;
  let i = 0;
  const pathOf = () => `/${stack.map((f) => f.name).join('/')}`;

  const textNode = (start: number, end: number, cdata: boolean): boolean => {
    const raw = text.slice(start, end);
    if (stack.length === 0) return /^\s*$/.test(raw);
    if (/^\s*$/.test(raw)) return true;
    const value = cdata ? raw : decodeXml(raw);
    const top = stack[stack.length - 1]!;
    let next: string | null = null;
    if (top.claimed) {
      const red = redactWhole(value, top.claimed);
      next = typeof red === 'string' ? red : fullText(top.claimed.type);
      hit(pathOf(), top.claimed.type);
    } else {
      const r = scanText(value, plan);
      if (r) {
        next = r.text;
        const p = pathOf();
        for (const t of r.types) hit(p, t);
      }
    }
    if (next !== null)
      edits.push([start, end, cdata ? next.replaceAll(']]>', ']]&gt;') : encodeXml(next, null)]);
    return true;
  };

  while (i < n) {
    const lt = text.indexOf('<', i);
    if (lt < 0) {
      if (!textNode(i, n, false)) return null;
      break;
    }
    if (lt > i && !textNode(i, lt, false)) return null;
    if (text.startsWith('<?', lt)) {
      const end = text.indexOf('?>', lt + 2);
      if (end < 0) return null;
      i = end + 2;
    } else if (text.startsWith('<!--', lt)) {
      const end = text.indexOf('-->', lt + 4);
      if (end < 0) return null;
      i = end + 3;
    } else if (text.startsWith('<![CDATA[', lt)) {
      const end = text.indexOf(']]>', lt + 9);
      if (end < 0 || stack.length === 0) return null;
      textNode(lt + 9, end, true);
      i = end + 3;
    } else if (text.startsWith('<!', lt)) {
      if (rootSeen) return null;
      const bracket = text.indexOf('[', lt);
      let end = text.indexOf('>', lt);
      if (bracket >= 0 && bracket < end) {
        const close = text.indexOf(']', bracket);
        if (close < 0) return null;
        end = text.indexOf('>', close);
      }
      if (end < 0) return null;
      i = end + 1;
    } else if (text.charCodeAt(lt + 1) === 0x2f) {
      XML_NAME.lastIndex = lt + 2;
      const m = XML_NAME.exec(text);
      if (!m) return null;
      let j = lt + 2 + m[0].length;
      while (j < n && isWs(text.charCodeAt(j))) j++;
      if (text[j] !== '>') return null;
      const top = stack.pop();
      if (!top || top.name !== m[0]) return null;
      i = j + 1;
    } else {
      XML_NAME.lastIndex = lt + 1;
      const m = XML_NAME.exec(text);
      if (!m) return null;
      if (stack.length === 0 && rootSeen) return null;
      const name = m[0];
      const parent = stack[stack.length - 1];
      const frame: XmlFrame = { name, claimed: parent?.claimed ?? xmlKeyMatch(plan, name) };
      let j = lt + 1 + name.length;
      let selfClosing = false;
      for (;;) {
        const before = j;
        while (j < n && isWs(text.charCodeAt(j))) j++;
        if (j >= n) return null;
        if (text[j] === '>') {
          j++;
          break;
        }
        if (text[j] === '/' && text[j + 1] === '>') {
          selfClosing = true;
          j += 2;
          break;
        }
        if (j === before) return null; // attributes are separated by white space
        XML_NAME.lastIndex = j;
        const a = XML_NAME.exec(text);
        if (!a) return null;
        j += a[0].length;
        while (j < n && isWs(text.charCodeAt(j))) j++;
        if (text[j] !== '=') return null;
        j++;
        while (j < n && isWs(text.charCodeAt(j))) j++;
        const quote = text[j];
        if (quote !== '"' && quote !== "'") return null;
        const vEnd = text.indexOf(quote, j + 1);
        if (vEnd < 0) return null;
        const raw = text.slice(j + 1, vEnd);
        if (raw.includes('<')) return null;
        if (raw.length > 0) {
          const value = decodeXml(raw);
          const km = frame.claimed ?? xmlKeyMatch(plan, a[0]);
          const path = `/${[...stack.map((f) => f.name), name].join('/')}/@${a[0]}`;
          let next: string | null = null;
          if (km) {
            const red = redactWhole(value, km);
            next = typeof red === 'string' ? red : fullText(km.type);
            hit(path, km.type);
          } else {
            const r = scanText(value, plan);
            if (r) {
              next = r.text;
              for (const t of r.types) hit(path, t);
            }
          }
          if (next !== null) edits.push([j + 1, vEnd, encodeXml(next, quote)]);
        }
        j = vEnd + 1;
      }
      rootSeen = true;
      if (!selfClosing) stack.push(frame);
      i = j;
    }
  }
  if (stack.length !== 0 || !rootSeen) return null;
  return applyEdits(text, edits);
}
