// A status tile: headline value with a small history line.

export interface SparklinePoint {
  ts: number
  value: number
}

export interface TileView {
  id: string
  title: string
  value: string
  points: SparklinePoint[]
}
