// Path patterns of exclusion rules and workflow conditions (docs/rules.md): `*` matches any run of
// characters (including `/` and nothing at all); every other character matches itself exactly,
// case-sensitively. Forms: exact `/x`, suffix `/x*`, prefix `*/x`, middle `/a/*/b`, several
// `/a/*/v*/h*`, and `*` alone (every path).
//
// A pattern is compiled once into a closure over its literal pieces; matching uses startsWith /
// endsWith / indexOf, no regular expression. Leftmost placement of each middle piece is optimal for
// `*`-only globs: if any placement matches, the leftmost one does.
export type PathMatcher = (path: string) => boolean;

const always: PathMatcher = () => true;

export function compilePathPattern(pattern: string): PathMatcher {
  if (!pattern.includes('*')) return (path) => path === pattern;
  const pieces = pattern.split('*');
  const head = pieces[0]!;
  const tail = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1).filter((p) => p.length > 0);
  if (head === '' && tail === '' && middle.length === 0) return always;
  const fixed = head.length + tail.length;
  return (path) => {
    if (path.length < fixed || !path.startsWith(head) || !path.endsWith(tail)) return false;
    let from = head.length;
    const end = path.length - tail.length;
    for (const piece of middle) {
      const at = path.indexOf(piece, from);
      if (at < 0 || at + piece.length > end) return false;
      from = at + piece.length;
    }
    return true;
  };
}

/** The path part of a captured path or URL path: the query string and fragment are not matched. */
export function pathOnly(path: string): string {
  const q = path.indexOf('?');
  const h = path.indexOf('#');
  const cut = q < 0 ? h : h < 0 ? q : Math.min(q, h);
  return cut < 0 ? path : path.slice(0, cut);
}
