// The shared crosshair's arithmetic, pure: which heat-map column holds a time.

/** Index of the column (starting at `times[i]`, ascending) that holds unix second `ts`, or null before the first or a column past the last. */
export function columnAt(times: number[], ts: number): number | null {
  const n = times.length
  if (!n || ts < times[0]!) return null
  const step = n > 1 ? times[n - 1]! - times[n - 2]! : 1
  if (ts >= times[n - 1]! + step) return null
  let lo = 0
  let hi = n - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (times[mid]! <= ts) lo = mid
    else hi = mid - 1
  }
  return lo
}
