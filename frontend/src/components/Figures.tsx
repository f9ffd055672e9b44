// A row of headline figures: a small label over each value.
import type { ReactNode } from 'react'

export interface Figure {
  label: string
  value: ReactNode
  title?: string
  testId?: string
}

export function Figures({ items, className = '' }: { items: Figure[]; className?: string }) {
  return (
    <dl className={`figures ${className}`}>
      {items.map((f) => (
        <div key={f.label}>
          <dt>{f.label}</dt>
          <dd data-testid={f.testId} title={f.title}>
            {f.value}
          </dd>
        </div>
      ))}
    </dl>
  )
}
