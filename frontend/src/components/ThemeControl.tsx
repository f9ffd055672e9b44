// The header's theme choice: follow the system, or always light or dark; kept in this browser.
import { setThemeChoice, THEME_CHOICES, useThemeChoice, type ThemeChoice } from '../lib/theme'

const LABEL: Record<ThemeChoice, string> = { system: 'Theme: system', light: 'Theme: light', dark: 'Theme: dark' }

export function ThemeControl() {
  const choice = useThemeChoice()
  return (
    <select
      className="header-select"
      aria-label="Colour theme"
      title="Colour theme: as the system is set, or always light or dark (kept in this browser)"
      data-testid="theme-select"
      value={choice}
      onChange={(e) => setThemeChoice(e.target.value as ThemeChoice)}
    >
      {THEME_CHOICES.map((c) => (
        <option key={c} value={c}>
          {LABEL[c]}
        </option>
      ))}
    </select>
  )
}
