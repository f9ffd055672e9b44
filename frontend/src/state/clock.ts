// The browser's clock as React state, ticking so that "ago" and running durations move on.
import { useEffect, useState } from 'react'

export function useNowMs(everyMs = 1_000): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs)
    return () => clearInterval(t)
  }, [everyMs])
  return now
}
