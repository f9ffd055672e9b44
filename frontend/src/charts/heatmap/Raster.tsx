// A heat map's cells as a raster beneath its chart: ECharts draws the axes, the colour key, the
// band and the annotations over it (on a transparent canvas), and the pointer is read here: the
// cell under it for the tooltip and for the band and zoom gestures. The cells are one image of a
// pixel each, scaled up: 20k of them draw in a few ms, where ECharts' heat-map series builds and
// paints an object per cell (about 200 ms for 20k; bench/ui_heatmap.mjs).
import { useLayoutEffect, useRef, useState, type MouseEvent, type MutableRefObject, type ReactNode } from 'react'
import type { HeatmapResult } from '../../api/client'
import { cssVar, useTheme } from '../../lib/theme'
import { timed } from '../../lib/timing'
import { HEAT_COLORS } from '../palette'
import { cellAtPoint, cellTip, parseColor, plotRect, rasterPixels, type Raster } from './transform'

export type Cell = { col: number; row: number }

const LEVELS = 64 // colours of the scale drawn: more than the eye tells apart on 8 stops

interface Props {
  result: HeatmapResult
  /** rasterGrid of `result`, on the colour scale the chart's key shows. */
  grid: Raster
  rateUnit: string
  /** The chart drawn over the cells: its canvas is the raster's size and place. */
  children: ReactNode
  /** Filled with the raster's canvas, for the PNG export to draw beneath the chart. */
  canvas: MutableRefObject<HTMLCanvasElement | null>
  /** A press and a release on the plot, with the cell under each (null off the cells). */
  onPress?: (cell: Cell | null) => void
  onRelease?: (cell: Cell | null, shift: boolean) => void
  /** The test id of the chart drawn over the cells. */
  chartTestId?: string
}

/** Where the chart's canvas is inside `box`, px. */
function chartBox(box: HTMLElement, chartTestId: string): { left: number; top: number; width: number; height: number } | null {
  const c = box.querySelector(`[data-testid="${chartTestId}"] canvas`)
  if (!c) return null
  const a = box.getBoundingClientRect()
  const b = c.getBoundingClientRect()
  return { left: b.left - a.left, top: b.top - a.top, width: b.width, height: b.height }
}

export function RasterPlot({ result, grid, rateUnit, children, canvas, onPress, onRelease, chartTestId = 'heatmap-chart' }: Props) {
  const box = useRef<HTMLDivElement>(null)
  const bitmap = useRef<HTMLCanvasElement | null>(null)
  const [size, setSize] = useState<{ left: number; top: number; width: number; height: number } | null>(null)
  const [tip, setTip] = useState<{ x: number; y: number; lines: [string, string, string] } | null>(null)
  const theme = useTheme()
  const { cols, rows } = grid

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
    const stops = HEAT_COLORS.map((v): [number, number, number] => parseColor(cssVar(v.slice(4, -1))) ?? [128, 128, 128])
    // one pixel per cell, scaled up to the plot without smoothing (cellAtPoint reads the pointer the same way)
    const img = (bitmap.current ??= document.createElement('canvas'))
    if (img.width !== cols || img.height !== rows) [img.width, img.height] = [cols, rows]
    img.getContext('2d')!.putImageData(new ImageData(rasterPixels(grid, stops, LEVELS), cols, rows), 0, 0)
    ctx.imageSmoothingEnabled = false
    ctx.drawImage(img, ...plotRect(size.width, size.height))
    timed('loupe:chart-drawn', t0, 'heatmap-cells')
  }, [grid, size, cols, rows, theme, canvas])

  const cellOf = (e: MouseEvent) => {
    const el = box.current
    const b = el && chartBox(el, chartTestId)
    if (!el || !b) return null
    const a = el.getBoundingClientRect()
    const x = e.clientX - a.left - b.left
    const y = e.clientY - a.top - b.top
    const cell = cellAtPoint(b.width, b.height, cols, rows, x, y)
    return cell && { ...cell, x: x + b.left, y: y + b.top }
  }
  return (
    <div
      ref={box}
      className="hm-plot"
      onMouseDown={(e) => onPress?.(cellOf(e))}
      onMouseUp={(e) => onRelease?.(cellOf(e), e.shiftKey)}
      onMouseMove={(e) => {
        const cell = cellOf(e)
        const rate = cell ? grid.rate[cell.col * rows + cell.row]! : NaN
        setTip(cell && rate > 0 ? { x: cell.x, y: cell.y, lines: cellTip(result, cell.col, cell.row, rate, rateUnit) } : null)
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
