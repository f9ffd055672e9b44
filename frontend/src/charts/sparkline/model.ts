// A status tile: headline value with a small history line and a weather level.

export interface SparklinePoint {
  ts: number
  value: number
}

/** Fishworks' weather, calmest first; a tile's level is an index into this. */
export const WEATHER = ['sunny', 'partly cloudy', 'cloudy', 'stormy', 'hurricane'] as const
export type Weather = (typeof WEATHER)[number]

export interface TileView {
  id: string
  title: string
  value: string
  points: SparklinePoint[]
  /** null when the tile cannot be shown (see error) */
  weather: Weather | null
  /** what the sparkline covers, e.g. 'last 7 days' */
  span: string
  /** the levels' bounds in words, e.g. 'sunny below 1,000 ops/s; partly cloudy from 1,000 ops/s; …' */
  scale: string
  /** what the weather is judged on, e.g. 'mean of the last 10 s: 1,234 ops/s' */
  level: string
  error: string | null
}
