// The colour theme: light, dark, or the system's, chosen per browser (localStorage). The page's
// <html data-theme> carries the theme in use; styles.css defines every colour for both.
// public/theme.js sets it before the first paint from the same stored choice; this module keeps
// it in step afterwards and tells charts (which draw on a canvas) when it changes.
import { useSyncExternalStore } from 'react'

export type Theme = 'light' | 'dark'
export type ThemeChoice = Theme | 'system'
export const THEME_CHOICES: readonly ThemeChoice[] = ['system', 'light', 'dark']
/** The localStorage key; public/theme.js reads the same one. */
export const THEME_KEY = 'loupe.theme'

/** A stored choice, or "system" for anything else (nothing stored, or an unknown value). */
export function parseChoice(raw: string | null | undefined): ThemeChoice {
  return raw === 'light' || raw === 'dark' ? raw : 'system'
}

export function resolveTheme(choice: ThemeChoice, systemDark: boolean): Theme {
  return choice === 'system' ? (systemDark ? 'dark' : 'light') : choice
}

const DARK_QUERY = '(prefers-color-scheme: dark)'
const listeners = new Set<() => void>()

function storedChoice(): ThemeChoice {
  try {
    return parseChoice(localStorage.getItem(THEME_KEY))
  } catch {
    return 'system' // storage disabled: follow the system
  }
}

// The choice in effect: as stored, or as made on this page when storage is disabled.
let choice: ThemeChoice | null = null
const currentChoice = () => (choice ??= storedChoice())

function apply() {
  const theme = resolveTheme(currentChoice(), matchMedia(DARK_QUERY).matches)
  if (document.documentElement.dataset.theme !== theme) document.documentElement.dataset.theme = theme
  for (const fn of listeners) fn()
}

let watching = false
function subscribe(fn: () => void): () => void {
  if (!watching) {
    watching = true
    // The system's preference changing, or the choice made in another tab.
    matchMedia(DARK_QUERY).addEventListener('change', apply)
    window.addEventListener('storage', (e) => {
      if (e.key !== THEME_KEY && e.key !== null) return
      choice = storedChoice()
      apply()
    })
    apply()
  }
  listeners.add(fn)
  return () => listeners.delete(fn)
}

export function setThemeChoice(next: ThemeChoice) {
  choice = next
  try {
    if (next === 'system') localStorage.removeItem(THEME_KEY)
    else localStorage.setItem(THEME_KEY, next)
  } catch {
    // storage disabled: the choice holds for this page only
  }
  apply()
}

/** The choice in effect (what the control shows). */
export function useThemeChoice(): ThemeChoice {
  return useSyncExternalStore(subscribe, currentChoice)
}

/** The theme in use (what charts draw with). */
export function useTheme(): Theme {
  return useSyncExternalStore(subscribe, () => (document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light'))
}

/**
 * A value with every `var(--name)` string in it replaced by what `lookup` gives for --name.
 * Canvas drawing cannot read CSS, so a chart option names its colours this way and the chart
 * wrapper resolves them for the theme in use. `data` arrays are points, not styles: they are
 * kept as they are (and not walked: they may hold many thousands).
 */
export function resolveVars<T>(value: T, lookup: (name: string) => string): T {
  if (typeof value === 'string') {
    const m = /^var\((--[\w-]+)\)$/.exec(value.trim())
    return (m ? lookup(m[1]!) || value : value) as T
  }
  if (Array.isArray(value)) return value.map((v) => resolveVars(v, lookup)) as T
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = k === 'data' && isPoints(v) ? v : resolveVars(v, lookup)
  return out as T
}

// Points are numbers, strings or arrays of them; a markArea's data holds objects (the spans'
// ends), which may carry a style of their own. The first item tells: data is all of one kind.
function isPoints(v: unknown): boolean {
  if (!Array.isArray(v)) return false
  const x: unknown = Array.isArray(v[0]) ? v[0][0] : v[0]
  return x === null || typeof x !== 'object'
}

/** The value of a CSS custom property of the page, as the current theme defines it. */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim()
}
