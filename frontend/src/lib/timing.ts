// User Timing marks of what a chart's update costs in the browser, read by `make bench` (through a
// PerformanceObserver) and visible in a browser's performance panel. Each is taken off the
// timeline at once, so a page left open for days does not pile them up; observers still get it.

/** A measure from `start` (performance.now()) to now. */
export function timed(name: string, start: number, detail?: string): void {
  performance.measure(name, { start, end: performance.now(), detail })
  performance.clearMeasures(name)
}

/** A mark at now. */
export function marked(name: string): void {
  performance.mark(name)
  performance.clearMarks(name)
}
