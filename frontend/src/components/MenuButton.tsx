// A toolbar button that toggles a panel anchored under it.
import type { ReactNode } from 'react'

interface Props {
  label: ReactNode
  open: boolean
  onToggle: () => void
  testId: string
  primary?: boolean
  disabled?: boolean
  children: ReactNode
}

export function MenuButton({ label, open, onToggle, testId, primary, disabled, children }: Props) {
  return (
    <div className="anchor">
      <button className={`button ${primary ? 'button-primary' : ''}`} onClick={onToggle} data-testid={testId} aria-expanded={open} disabled={disabled}>
        {label}
      </button>
      {open && children}
    </div>
  )
}
