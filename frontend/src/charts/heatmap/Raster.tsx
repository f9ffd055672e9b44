// A heat map's cells as a raster beneath its chart, with the time axis's labels, the annotations
// and the selected band: ECharts draws the bucket axis and the colour key over it (on a
// transparent canvas), and the pointer is read here: the cell under it for the tooltip and for
// the band and zoom gestures. The cells are one image of a pixel each, scaled up: 20k of them
// draw in a few ms, where ECharts' heat-map series builds and paints an object per cell (about
// 200 ms for 20k; bench/ui_heatmap.mjs). The image is kept between draws: a live map's second
// repaints only the columns it wrote (dirtyColumns).
import { useEffect, useLayoutEffect, useMemo, useRef, useState, type MutableRefObject, type ReactNode } from 'react'
import { formatTick } from '../../lib/format'
import { cssVar, useTheme } from '../../lib/theme'
import { timed } from '../../lib/timing'
import { annotationLook, categorySpans, clipAnnotations, type Annotation, type AnnotationKind } from '../annotations/transform'
import { CHART, HEAT_COLORS } from '../palette'
import type { Band, HeatGrid, Span } from './model'
import { bandRect, cellAtPoint, cellTip, dirtyColumns, paintColumns, paletteOf, parseColor, plotRect, timeTicks } from './transform'

export type Cell = { col: number; row: number }

const LEVELS = 64 // colours of the scale drawn: more than the eye tells apart on 8 stops

interface Props {
  /** The cells; rows [lo, hi) of it are drawn (a crop and a zoom keep a run of rows). */
  grid: HeatGrid
  /** grid.version when it was handed over: a new one draws what changed. */
  version: number
  lo: number
  hi: number
  /** log10 bounds of the colour scale the chart's key shows. */
  range: { min: number; max: number }
  rateUnit: string
  /** The chart drawn over the cells: its canvas is the raster's size and place. */
  children: ReactNode
  /** Filled with the raster's canvas, for the PNG export to draw beneath the chart. */
  canvas: MutableRefObject<HTMLCanvasElement | null>
  /**
   * A press on the plot and its release, with the cell under each (null off the cells): a release
   * off the cells (or off the plot, anywhere in the window) after a press on one gives the nearest cell.
   */
  onPress?: (cell: Cell | null) => void
  onRelease?: (cell: Cell | null, shift: boolean) => void
  /** The test id of the chart drawn over the cells. */
  chartTestId?: string
  /** Spans of time marked over the cells (runs, alerts, agents). */
  annotations?: Annotation[]
  /** The band selected, over the columns of `span` (none: all of them). */
  selection?: Band | null
  span?: Span | null
}

/** A colour of the theme, named as the palette names it (var(--name)). */
const themed = (v: string) => cssVar(v.slice(4, -1))

/** What the raster draws in, read from the stylesheet once a theme (reading computed style is not free). */
function looks() {
  const kind = (k: AnnotationKind) => {
    const a = annotationLook(k)
    return { fill: themed(a.fill), border: themed(a.border), text: themed(a.text), label: a.label }
  }
  return {
    palette: paletteOf(HEAT_COLORS.map((v): [number, number, number] => parseColor(themed(v)) ?? [128, 128, 128]), LEVELS),
    text: themed(CHART.text),
    axis: themed(CHART.axis),
    annotation: { run: kind('run'), alert: kind('alert'), agent: kind('agent') },
    band: { fill: themed(CHART.bandFill), line: themed(CHART.bandLine) },
  }
}

/**
 * Over the cells: the annotations (as ECharts' markArea drew them: a filled span with a border,
 * its words at its top left), the band `rect` (bandRect) over them, and, under the plot, the time
 * axis's ticks and labels (as ECharts' axis: 5 px ticks, 12 px text 8 px below the axis).
 */
function drawFurniture(
  ctx: CanvasRenderingContext2D,
  grid: HeatGrid,
  annotations: Annotation[],
  rect: [number, number, number, number] | null,
  look: ReturnType<typeof looks>,
  width: number,
  height: number,
) {
  const [left, top, w, h] = plotRect(width, height)
  const at = (pos: number) => left + ((pos + 0.5) / grid.cols) * w // a column position (column i spans i - 0.5 .. i + 0.5)
  ctx.font = '11px sans-serif'
  ctx.textAlign = 'left'
  ctx.textBaseline = 'top'
  ctx.lineWidth = 1
  for (const m of categorySpans(clipAnnotations(annotations, grid.start, grid.end), grid.timestamps, grid.step)) {
    const st = look.annotation[m.kind ?? 'run']
    const [x0, x1] = [at(m.lo), at(m.hi)]
    ctx.fillStyle = st.fill
    ctx.fillRect(x0, top, x1 - x0, h)
    ctx.strokeStyle = st.border
    ctx.strokeRect(x0, top, x1 - x0, h)
    if (st.label) {
      ctx.fillStyle = st.text
      ctx.fillText(m.label, x0 + 5, top + 5)
    }
  }
  if (rect) {
    ctx.fillStyle = look.band.fill
    ctx.fillRect(...rect)
    ctx.strokeStyle = look.band.line
    ctx.lineWidth = 1.5
    ctx.strokeRect(...rect)
    ctx.lineWidth = 1
  }
  ctx.font = '12px sans-serif'
  ctx.textAlign = 'center'
  const widest = ctx.measureText(formatTick(grid.start, grid.cols * grid.step)).width
  ctx.strokeStyle = look.axis
  ctx.fillStyle = look.text
  ctx.beginPath()
  for (const t of timeTicks(grid.start, grid.step, grid.cols, Math.floor(w / (widest + 24)))) {
    const x = Math.round(left + t.x * w) + 0.5
    ctx.moveTo(x, top + h)
    ctx.lineTo(x, top + h + 5)
    if (x + widest / 2 <= width) ctx.fillText(t.label, x, top + h + 8)
  }
  ctx.stroke()
}

/** Where the chart's canvas is inside `box`, px. */
function chartBox(box: HTMLElement, chartTestId: string): { left: number; top: number; width: number; height: number } | null {
  const c = box.querySelector(`[data-testid="${chartTestId}"] canvas`)
  if (!c) return null
  const a = box.getBoundingClientRect()
  const b = c.getBoundingClientRect()
  return { left: b.left - a.left, top: b.top - a.top, width: b.width, height: b.height }
}

/** What the image beneath a chart holds: painted from a grid at a version, its rows, colour scale and palette. */
interface Painted {
  grid: HeatGrid
  version: number
  lo: number
  hi: number
  range: { min: number; max: number }
  palette: Uint8Array
  image: ImageData
}

const NONE: Annotation[] = []

export function RasterPlot(props: Props) {
  const { grid, version, lo, hi, range, rateUnit, children, canvas, onPress, onRelease, chartTestId = 'heatmap-chart', annotations = NONE, selection, span } = props
  const box = useRef<HTMLDivElement>(null)
  const bitmap = useRef<HTMLCanvasElement | null>(null)
  const painted = useRef<Painted | null>(null)
  const [size, setSize] = useState<{ left: number; top: number; width: number; height: number } | null>(null)
  const [tip, setTip] = useState<{ x: number; y: number; lines: [string, string, string] } | null>(null)
  const theme = useTheme()
  const cols = grid.cols
  const rows = hi - lo
  const look = useMemo(looks, [theme])
  const palette = look.palette

  useLayoutEffect(() => {
    const el = box.current
    if (!el) return
    const measure = () => {
      const b = chartBox(el, chartTestId)
      setSize((s) => (b && (!s || s.left !== b.left || s.top !== b.top || s.width !== b.width || s.height !== b.height) ? b : s))
    }
    measure()
    const ro = new ResizeObserver(measure)
    ro.observe(el)
    return () => ro.disconnect()
  }, [chartTestId])

  // before the browser paints, so that the cells and the chart over them show the same second
  useLayoutEffect(() => {
    const c = canvas.current
    if (!c || !size) return
    const t0 = performance.now()
    const dpr = window.devicePixelRatio || 1
    const [w, h] = [Math.round(size.width * dpr), Math.round(size.height * dpr)]
    if (c.width !== w || c.height !== h) [c.width, c.height] = [w, h] // a new backing store only on a new size
    const ctx = c.getContext('2d')
    if (!ctx) return
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0)
    ctx.clearRect(0, 0, size.width, size.height)
    if (!cols || !rows) return
    // one pixel per cell, scaled up to the plot without smoothing (cellAtPoint reads the pointer the same way)
    const img = (bitmap.current ??= document.createElement('canvas'))
    const p = painted.current
    // the same image moved on by a second: only the columns written since it was painted
    const same = p && p.grid === grid && p.lo === lo && p.hi === hi && p.range.min === range.min && p.range.max === range.max
      && p.palette === palette && p.image.width === cols && p.image.height === rows && grid.moved <= p.version
    const image = p && p.image.width === cols && p.image.height === rows ? p.image : new ImageData(cols, rows)
    const [c0, c1] = same ? dirtyColumns(grid.written, p.version) : [0, cols]
    if (img.width !== cols || img.height !== rows) [img.width, img.height] = [cols, rows]
    if (c1 > c0) {
      paintColumns(grid, lo, hi, range, palette, image.data, c0, c1)
      img.getContext('2d')!.putImageData(image, 0, 0, c0, 0, c1 - c0, rows)
    }
    painted.current = { grid, version: grid.version, lo, hi, range, palette, image }
    ctx.imageSmoothingEnabled = false
    const plot = plotRect(size.width, size.height)
    ctx.drawImage(img, ...plot)
    // the band over the rows drawn; a span's columns found again at each draw, as new ones move it along
    const rect = selection ? bandRect({ timestamps: grid.timestamps, step: grid.step, buckets: grid.buckets.slice(lo, hi) }, selection, span, plot) : null
    c.dataset.band = rect ? rect.map((v) => Math.round(v * 10) / 10).join(',') : '' // where it is drawn, for tests
    drawFurniture(ctx, grid, annotations, rect, look, size.width, size.height)
    timed('loupe:chart-drawn', t0, 'heatmap-cells')
  }, [grid, version, lo, hi, range, look, palette, annotations, selection, span, size, cols, rows, canvas])

  // A press on the cells is released wherever the pointer is then, off the plot or the card too:
  // the window hears it. The handlers are the latest render's.
  const release = useRef(onRelease)
  release.current = onRelease
  const unlisten = useRef<(() => void) | null>(null)
  useEffect(() => () => unlisten.current?.(), [])

  const cellOf = (e: { clientX: number; clientY: number }, clamp = false) => {
    const el = box.current
    const b = el && chartBox(el, chartTestId)
    if (!el || !b) return null
    const a = el.getBoundingClientRect()
    const x = e.clientX - a.left - b.left
    const y = e.clientY - a.top - b.top
    const cell = cellAtPoint(b.width, b.height, cols, rows, x, y, clamp)
    return cell && { ...cell, x: x + b.left, y: y + b.top }
  }
  return (
    <div
      ref={box}
      className="hm-plot"
      onMouseDown={(e) => {
        if (e.button !== 0) return
        const cell = cellOf(e)
        onPress?.(cell)
        unlisten.current?.()
        const up = (u: globalThis.MouseEvent) => {
          unlisten.current?.()
          release.current?.(cellOf(u, cell !== null), u.shiftKey)
        }
        window.addEventListener('mouseup', up)
        unlisten.current = () => {
          window.removeEventListener('mouseup', up)
          unlisten.current = null
        }
      }}
      onMouseMove={(e) => {
        const cell = cellOf(e)
        const rate = cell ? grid.rate[cell.col * grid.rows + lo + cell.row]! : 0
        setTip(cell && rate > 0 ? { x: cell.x, y: cell.y, lines: cellTip(grid, cell.col, lo + cell.row, rate, rateUnit) } : null)
      }}
      onMouseLeave={() => setTip(null)}
    >
      <canvas
        ref={canvas}
        className="hm-raster"
        aria-hidden
        style={size ? { left: size.left, top: size.top, width: size.width, height: size.height } : { display: 'none' }}
      />
      {children}
      {tip && (
        <div
          className="hm-tip"
          data-testid="heatmap-tip"
          // beside the pointer, on its left once past the middle, so that it stays on the card
          style={{ left: tip.x + (size && tip.x > size.left + size.width / 2 ? -14 : 14), top: tip.y + 14, transform: size && tip.x > size.left + size.width / 2 ? 'translateX(-100%)' : undefined }}
        >
          {tip.lines[0]}
          <br />
          {tip.lines[1]}
          <br />
          <b>{tip.lines[2]}</b>
        </div>
      )}
    </div>
  )
}
