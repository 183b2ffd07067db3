/**
 * Some browsers report a POSIX locale as their language (`en-US@posix`, seen in headless Chromium
 * on Linux), which `Intl` refuses with "Invalid language tag". Libraries that format with
 * `navigator.language` at load (uPlot does) then throw before the app renders, leaving a blank
 * page. Imported first by main.tsx: when the reported language is refused, `navigator.language`
 * and `navigator.languages` read as their valid BCP 47 part (`en-US`), else `en-US`.
 */
function usable(tag: string): string | undefined {
  for (const candidate of [tag, tag.replace(/[@.].*$/, '').replace(/_/g, '-')]) {
    try {
      return Intl.getCanonicalLocales(candidate)[0];
    } catch {
      // not a language tag: try the next form
    }
  }
  return undefined;
}

if (typeof navigator !== 'undefined') {
  const reported = [navigator.language, ...(navigator.languages ?? [])].filter(Boolean);
  const valid = reported.map(usable).filter((t): t is string => t !== undefined);
  if (reported.some((t) => usable(t) !== t)) {
    const languages = valid.length ? [...new Set(valid)] : ['en-US'];
    Object.defineProperty(navigator, 'language', { configurable: true, get: () => languages[0] });
    Object.defineProperty(navigator, 'languages', { configurable: true, get: () => languages });
  }
}

export {};
