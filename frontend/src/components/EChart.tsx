// The only module that touches ECharts: init, dispose, resize, setOption, theme and events.
// Charts describe what to draw with a ChartOption built by a pure transform. Its colours may be
// CSS custom properties, var(--name) (charts/palette.ts): they are resolved here for the theme in
// use, and a theme change redraws every chart with the same option (its state is the caller's).
import { memo, useEffect, useRef, type CSSProperties, type MutableRefObject } from 'react'
import * as echarts from 'echarts/core'
import {
  HeatmapChart,
  LineChart,
  SunburstChart,
  TreemapChart,
  type HeatmapSeriesOption,
  type LineSeriesOption,
  type SunburstSeriesOption,
  type TreemapSeriesOption,
} from 'echarts/charts'
import {
  GridComponent,
  MarkAreaComponent,
  MarkLineComponent,
  TooltipComponent,
  VisualMapComponent,
  type GridComponentOption,
  type MarkAreaComponentOption,
  type TooltipComponentOption,
  type VisualMapComponentOption,
} from 'echarts/components'
import { CanvasRenderer } from 'echarts/renderers'
import { cssVar, resolveVars, useTheme, type Theme } from '../lib/theme'
import { columnAt } from './crosshair'
import { timed } from '../lib/timing'

echarts.use([LineChart, HeatmapChart, TreemapChart, SunburstChart, GridComponent, TooltipComponent, VisualMapComponent, MarkAreaComponent, MarkLineComponent, CanvasRenderer])

export type ChartOption = echarts.ComposeOption<
  | LineSeriesOption
  | HeatmapSeriesOption
  | TreemapSeriesOption
  | SunburstSeriesOption
  | GridComponentOption
  | TooltipComponentOption
  | VisualMapComponentOption
  | MarkAreaComponentOption
>
export type LineSeries = LineSeriesOption
export type HeatmapSeries = HeatmapSeriesOption
export type TreemapSeries = TreemapSeriesOption
export type SunburstSeries = SunburstSeriesOption

/** What a chart event tells its handler, without ECharts' own types. */
export interface ChartEvent {
  seriesId: string | undefined
  seriesName: string | undefined
  seriesIndex: number | undefined
  dataIndex: number | undefined
  value: unknown
  /** The data item's own `id`, when it has one (tree nodes of a treemap or sunburst). */
  dataId: string | undefined
  clientX: number
  clientY: number
  shiftKey: boolean
}

export type ChartEventName = 'click' | 'mousedown' | 'mouseup' | 'mouseover'

interface Props {
  option: ChartOption
  onEvents?: Partial<Record<ChartEventName, (e: ChartEvent) => void>>
  style?: CSSProperties
  className?: string
  testId?: string
  ariaLabel?: string
  /**
   * Charts of one group share their crosshair: hovering one shows the same time on the others
   * (their tooltip, or a heat map's pointer line). None: on its own.
   */
  group?: string | null
  /** For a time axis of column positions (a heat map's: 0, 1, 2 …): the unix second each column starts at. */
  times?: number[]
  /** Filled with a function that draws the chart as a PNG data: URL (for "save as PNG"). */
  exporter?: MutableRefObject<(() => string) | null>
  /** A canvas drawn beneath the chart, its size and place (a heat map's cells): the PNG has it too. */
  underlay?: MutableRefObject<HTMLCanvasElement | null>
}

/** A chart in a crosshair group, as the group's other charts reach it. */
interface Member {
  chart: echarts.ECharts
  el: HTMLDivElement
  times: () => number[] | undefined
}
const groups = new Map<string, Set<Member>>()

/** The x pixel of unix second `ts` on a member's axis, or null when it is outside. */
function pixelOf(m: Member, ts: number): number | null {
  const times = m.times()
  const value = times ? columnAt(times, ts) : ts * 1000
  if (value === null) return null
  const x = m.chart.convertToPixel({ xAxisIndex: 0 }, value)
  return typeof x === 'number' && Number.isFinite(x) ? x : null
}

/** The unix second under pixel (x, y) of a member, or null when the pointer is off its plot. */
function timeAt(m: Member, x: number, y: number): number | null {
  if (!m.chart.containPixel('grid', [x, y])) return null
  const v = m.chart.convertFromPixel({ xAxisIndex: 0 }, x)
  if (typeof v !== 'number' || !Number.isFinite(v)) return null
  const times = m.times()
  return times ? (times[Math.round(v)] ?? null) : Math.round(v / 1000)
}

/** Show unix second `ts` (null: nothing) on every member of `group` but `from`. */
function showTime(group: string, from: Member, ts: number | null) {
  for (const m of groups.get(group) ?? []) {
    if (m === from) continue
    const x = ts === null ? null : pixelOf(m, ts)
    m.el.dataset.crosshair = x === null ? '' : String(ts)
    if (x === null) {
      m.chart.dispatchAction({ type: 'hideTip' })
      m.chart.dispatchAction({ type: 'updateAxisPointer', currTrigger: 'leave' })
    } else if (m.times()) {
      // a heat map's tooltip is a cell's: draw only its pointer line
      m.chart.dispatchAction({ type: 'updateAxisPointer', currTrigger: 'mousemove', x, y: m.chart.getHeight() / 2 })
    } else {
      m.chart.dispatchAction({ type: 'showTip', x, y: m.chart.getHeight() / 2 })
    }
  }
}

// Resolved custom properties of the theme they were read in (reading computed style is not free
// and a chart redraws every second).
let resolved: { theme: Theme | null; values: Map<string, string> } = { theme: null, values: new Map() }

function themeColor(theme: Theme, name: string): string {
  if (resolved.theme !== theme) resolved = { theme, values: new Map() }
  let v = resolved.values.get(name)
  if (v === undefined) {
    v = cssVar(name)
    if (v) resolved.values.set(name, v) // empty: the stylesheet is not there yet (development)
  }
  return v
}

/** ECharts' defaults for what a chart's option leaves unstyled: text, axes, tooltip, colour key. */
function chartTheme(theme: Theme) {
  const c = (name: string) => themeColor(theme, name)
  const axis = {
    axisLine: { lineStyle: { color: c('--chart-axis') } },
    axisTick: { lineStyle: { color: c('--chart-axis') } },
    axisLabel: { color: c('--chart-text') },
    splitLine: { lineStyle: { color: [c('--chart-split')] } },
  }
  return {
    backgroundColor: 'transparent',
    textStyle: { color: c('--chart-text') },
    categoryAxis: axis,
    valueAxis: axis,
    timeAxis: axis,
    logAxis: axis,
    tooltip: { backgroundColor: c('--panel'), borderColor: c('--line'), textStyle: { color: c('--ink') } },
    visualMap: { textStyle: { color: c('--chart-text') } },
  }
}

interface RawParams {
  seriesId?: string
  seriesName?: string
  seriesIndex?: number
  dataIndex?: number
  value?: unknown
  data?: unknown
  event?: { event?: MouseEvent }
}

function toChartEvent(p: RawParams): ChartEvent {
  const ev = p.event?.event
  return {
    seriesId: p.seriesId,
    seriesName: p.seriesName,
    seriesIndex: p.seriesIndex,
    dataIndex: p.dataIndex,
    value: p.value,
    dataId: typeof p.data === 'object' && p.data !== null && 'id' in p.data ? String((p.data as { id: unknown }).id) : undefined,
    clientX: ev?.clientX ?? 0,
    clientY: ev?.clientY ?? 0,
    shiftKey: ev?.shiftKey ?? false,
  }
}

/** The chart as a PNG data: URL at twice its size, on the card's colour, over `under` when there is one. */
function pngOf(c: echarts.ECharts, under: HTMLCanvasElement | null): string {
  if (!under) return c.getDataURL({ type: 'png', pixelRatio: 2, backgroundColor: cssVar('--panel') })
  const top = c.renderToCanvas({ pixelRatio: 2, backgroundColor: 'transparent' })
  const out = document.createElement('canvas')
  out.width = top.width
  out.height = top.height
  const ctx = out.getContext('2d')!
  ctx.fillStyle = cssVar('--panel')
  ctx.fillRect(0, 0, out.width, out.height)
  ctx.drawImage(under, 0, 0, out.width, out.height)
  ctx.drawImage(top, 0, 0)
  return out.toDataURL('image/png')
}

const EVENT_NAMES: ChartEventName[] = ['click', 'mousedown', 'mouseup', 'mouseover']

// Memoised: a parent drawn again each second (a live heat map's) with the same option and props
// does not draw its chart's element again.
export const EChart = memo(function EChart({ option, onEvents, style, className, testId, ariaLabel, group, times, exporter, underlay }: Props) {
  const el = useRef<HTMLDivElement>(null)
  const chart = useRef<echarts.ECharts | null>(null)
  const shown = useRef<ChartOption | null>(null)
  const handlers = useRef(onEvents)
  handlers.current = onEvents
  const theme = useTheme()
  const drawnTheme = useRef(theme)
  const shownTimes = useRef(times)
  shownTimes.current = times

  useEffect(() => {
    const div = el.current
    if (!div) return
    const c = echarts.init(div, chartTheme(drawnTheme.current), { renderer: 'canvas' })
    chart.current = c
    for (const name of EVENT_NAMES) {
      c.on(name, (p) => handlers.current?.[name]?.(toChartEvent(p as RawParams)))
    }
    const ro = new ResizeObserver(() => c.resize())
    ro.observe(div)
    if (exporter) exporter.current = () => pngOf(c, underlay?.current ?? null)
    return () => {
      if (exporter) exporter.current = null
      ro.disconnect()
      c.dispose()
      chart.current = null
      shown.current = null
    }
  }, [])

  useEffect(() => {
    const c = chart.current
    if (!c) return
    if (drawnTheme.current !== theme) {
      c.setTheme(chartTheme(theme))
      drawnTheme.current = theme
      shown.current = null // the option's own colours are the old theme's
    }
    if (shown.current === option) return
    // Synchronous: with lazyUpdate a mouse move between setOption and the render hits a series without data.
    const t0 = performance.now()
    c.setOption(resolveVars(option, (name) => themeColor(theme, name)), { notMerge: true })
    shown.current = option
    timed('loupe:chart-drawn', t0, testId)
  }, [option, theme])

  useEffect(() => {
    const c = chart.current
    const div = el.current
    if (!c || !div || !group) return
    const me: Member = { chart: c, el: div, times: () => shownTimes.current }
    const members = groups.get(group) ?? new Set<Member>()
    groups.set(group, members.add(me))
    const zr = c.getZr()
    const move = (e: { offsetX: number; offsetY: number }) => showTime(group, me, timeAt(me, e.offsetX, e.offsetY))
    const out = () => showTime(group, me, null)
    zr.on('mousemove', move)
    zr.on('globalout', out)
    return () => {
      zr.off('mousemove', move)
      zr.off('globalout', out)
      members.delete(me)
      if (!members.size) groups.delete(group)
    }
  }, [group])

  return <div ref={el} className={className} style={style} data-testid={testId} role="img" aria-label={ariaLabel} data-group={group ?? ''} data-chart-theme={theme} />
})
