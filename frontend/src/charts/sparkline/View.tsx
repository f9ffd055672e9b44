// A status tile: the headline value, its weather and a sparkline of the last days.
import { useMemo } from 'react'
import { EChart } from '../../components/EChart'
import type { SparklinePoint, TileView, Weather } from './model'
import { toSparklineOption } from './transform'
import './tiles.css'

const CLOUD = 'M6.5 20h11a4 4 0 0 0 .6-7.95A6 6 0 0 0 6.6 11.2 4.4 4.4 0 0 0 6.5 20z'
const RAYS = [0, 45, 90, 135, 180, 225, 270, 315]

function Sun({ cx, cy, r }: { cx: number; cy: number; r: number }) {
  return (
    <g className="wx-sun">
      <circle cx={cx} cy={cy} r={r} />
      {RAYS.map((a) => {
        const rad = (a * Math.PI) / 180
        const [c, s] = [Math.cos(rad), Math.sin(rad)]
        return <line key={a} x1={cx + c * r * 1.45} y1={cy + s * r * 1.45} x2={cx + c * r * 1.95} y2={cy + s * r * 1.95} />
      })}
    </g>
  )
}

/** The level drawn; always shown beside its name (the drawing alone says nothing to a screen reader). */
export function WeatherIcon({ weather }: { weather: Weather }) {
  return (
    <svg className="wx-icon" viewBox="0 0 24 24" width="22" height="22" aria-hidden>
      {weather === 'sunny' && <Sun cx={12} cy={12} r={4.5} />}
      {weather === 'partly cloudy' && (
        <>
          <Sun cx={9} cy={8.5} r={3.4} />
          <path className="wx-cloud" d={CLOUD} transform="translate(2 1) scale(0.85)" />
        </>
      )}
      {weather === 'cloudy' && (
        <>
          <path className="wx-cloud wx-cloud-back" d={CLOUD} transform="translate(4 -4) scale(0.8)" />
          <path className="wx-cloud" d={CLOUD} transform="translate(0 1)" />
        </>
      )}
      {weather === 'stormy' && (
        <>
          <path className="wx-cloud wx-cloud-dark" d={CLOUD} transform="translate(0 -5)" />
          <path className="wx-bolt" d="M12.5 13.5 9 19h3l-1.2 4.5L15.5 17h-3l1.5-3.5z" />
        </>
      )}
      {weather === 'hurricane' && (
        <g className="wx-hurricane">
          <circle cx="12" cy="12" r="3.2" />
          <path d="M12 8.8C11.5 5 14.5 2.2 19.5 2.5 16.4 3.6 14.8 5.8 15.1 9.6" />
          <path d="M12 15.2c.5 3.8-2.5 6.6-7.5 6.3 3.1-1.1 4.7-3.3 4.4-7.1" />
        </g>
      )}
    </svg>
  )
}

export function weatherLabel(w: Weather): string {
  return w.charAt(0).toUpperCase() + w.slice(1)
}

export function SparklineTile({ tile, onOpen, demo }: { tile: TileView; onOpen: () => void; demo: boolean }) {
  const option = useMemo(() => toSparklineOption(tile.points), [tile.points])
  const w = tile.weather
  return (
    <button
      className={`tile${w ? ` wx-${w.replace(' ', '-')}` : ''}`}
      onClick={onOpen}
      data-testid={`tile-${tile.id}`}
      data-weather={w ?? ''}
      title={`Open ${tile.title} in the worksheet. Weather (${tile.level}): ${tile.scale}.`}
    >
      <span className="tile-head">
        <span className="tile-title">{tile.title}</span>
        {demo && <span className="badge badge-demo">demo data</span>}
        {w && (
          <span className="tile-weather" data-testid="tile-weather">
            <WeatherIcon weather={w} />
            {weatherLabel(w)}
          </span>
        )}
      </span>
      {tile.error ? (
        <span className="tile-error" data-testid="tile-error">
          Cannot show this tile: {tile.error}
        </span>
      ) : (
        <span className="tile-value" data-testid="tile-value">
          {tile.value}
        </span>
      )}
      <EChart option={option} className="tile-spark" ariaLabel={`${tile.title} over the ${tile.span}`} />
      <span className="tile-span" data-testid="tile-span">
        {tile.span}
      </span>
    </button>
  )
}

/** A bare sparkline (no tile), e.g. a probe's own cost over the last minutes. */
export function Sparkline({ points, label, className, testId }: { points: SparklinePoint[]; label: string; className?: string; testId?: string }) {
  const option = useMemo(() => toSparklineOption(points), [points])
  return <EChart option={option} className={className} ariaLabel={label} testId={testId} />
}
