// A floating panel that closes on Escape or a click outside it.
import { useEffect, useLayoutEffect, useRef, type CSSProperties, type ReactNode } from 'react'

interface Props {
  onClose: () => void
  /** Fixed position on screen (a menu at the mouse); otherwise placed under its parent. */
  at?: { x: number; y: number }
  align?: 'left' | 'right'
  className?: string
  testId?: string
  label: string
  children: ReactNode
}

export function Popover({ onClose, at, align = 'left', className, testId, label, children }: Props) {
  const el = useRef<HTMLDivElement>(null)
  const close = useRef(onClose)
  close.current = onClose
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && close.current()
    const onDown = (e: MouseEvent) => {
      if (el.current && !el.current.contains(e.target as Node)) close.current()
    }
    document.addEventListener('keydown', onKey)
    // Wait a tick so that the click that opened the popover does not close it.
    const t = setTimeout(() => document.addEventListener('mousedown', onDown), 0)
    return () => {
      clearTimeout(t)
      document.removeEventListener('keydown', onKey)
      document.removeEventListener('mousedown', onDown)
    }
  }, [])
  // Anchored under a button that the toolbar wrapped to the page's edge, it would hang off screen: shift it back.
  useLayoutEffect(() => {
    const box = el.current
    if (!box || at) return
    const r = box.getBoundingClientRect()
    const dx = r.left < 8 ? 8 - r.left : r.right > window.innerWidth - 8 ? window.innerWidth - 8 - r.right : 0
    if (dx) box.style.transform = `translateX(${Math.round(dx)}px)`
  }, [at])
  useEffect(() => {
    el.current?.querySelector<HTMLElement>('button, input, select, [tabindex]')?.focus()
  }, [])
  let style: CSSProperties | undefined
  if (at) {
    const x = Math.min(at.x, window.innerWidth - 260)
    const y = Math.min(at.y, window.innerHeight - 320)
    style = { position: 'fixed', left: Math.max(8, x), top: Math.max(8, y) }
  }
  return (
    <div
      ref={el}
      role="dialog"
      aria-label={label}
      className={`popover ${at ? '' : `popover-${align}`} ${className ?? ''}`}
      style={style}
      data-testid={testId}
    >
      {children}
    </div>
  )
}
