import { useSyncExternalStore } from 'react';

/**
 * Light or dark theme. By default the dashboard follows the system setting
 * (`prefers-color-scheme`); a person's pick is kept in localStorage under `tapline.theme` and set
 * as `data-theme` on <html>, which the stylesheet's colour variables follow.
 */
export type ThemePref = 'system' | 'light' | 'dark';
export type Theme = 'light' | 'dark';

export const THEME_KEY = 'tapline.theme';
const CHANGE = 'tapline-theme-change';
const media = () => window.matchMedia('(prefers-color-scheme: dark)');

export function storedThemePref(): ThemePref {
  try {
    const v = localStorage.getItem(THEME_KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system';
  }
}

/** Sets `data-theme` on <html> from the stored pick (none: the stylesheet follows the system). */
export function applyThemePref(pref: ThemePref = storedThemePref()): void {
  const root = document.documentElement;
  if (pref === 'system') delete root.dataset.theme;
  else root.dataset.theme = pref;
}

export function setThemePref(pref: ThemePref): void {
  try {
    if (pref === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, pref);
  } catch {
    // Storage refused (private mode): the pick still applies to this page.
  }
  applyThemePref(pref);
  window.dispatchEvent(new Event(CHANGE));
}

function resolved(): Theme {
  const pref = storedThemePref();
  if (pref !== 'system') return pref;
  return media().matches ? 'dark' : 'light';
}

function subscribe(cb: () => void): () => void {
  const m = media();
  m.addEventListener('change', cb);
  window.addEventListener(CHANGE, cb);
  // Another tab's pick.
  const onStorage = (e: StorageEvent) => {
    if (e.key === THEME_KEY) {
      applyThemePref();
      cb();
    }
  };
  window.addEventListener('storage', onStorage);
  return () => {
    m.removeEventListener('change', cb);
    window.removeEventListener(CHANGE, cb);
    window.removeEventListener('storage', onStorage);
  };
}

/** The theme in effect ('light' or 'dark'); re-renders when the system setting or the pick changes. */
export function useTheme(): Theme {
  return useSyncExternalStore(subscribe, resolved, () => 'light');
}

/** The person's pick ('system', 'light' or 'dark'). */
export function useThemePref(): ThemePref {
  return useSyncExternalStore(subscribe, storedThemePref, () => 'system');
}

/** A CSS colour variable's value in the theme in effect (canvas drawing cannot use var()). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
