// The typed API client. Every type comes from schema.d.ts, generated from the
// backend's OpenAPI document (`npm run gen:api`); never write API types by hand.
import createClient from 'openapi-fetch'
import type { components, paths } from './schema'

export type Schemas = components['schemas']
export type QueryResult = Schemas['QueryResult']
export type HeatmapResult = Schemas['HeatmapResult']
export type MembersResult = Schemas['MembersResult']
export type HierarchyResult = Schemas['HierarchyResult']
export type HierarchyNode = Schemas['HierarchyNode']
export type BreakdownRow = Schemas['BreakdownRow']
export type Bucket = Schemas['Bucket']
export type MetricPublic = Schemas['MetricPublic']
export type MetricCatalog = Schemas['MetricCatalog']
export type SourceList = Schemas['SourceList']
export type SourcePublic = Schemas['SourcePublic']
export type StatusResult = Schemas['StatusResult']
export type StatusTile = Schemas['StatusTile']
export type TileSpec = Schemas['TileSpec']
export type TilesConfig = Schemas['TilesConfig']
export type WorksheetPublic = Schemas['WorksheetPublic']
export type WorksheetCreate = Schemas['WorksheetCreate']
export type WorksheetStatistic = Schemas['WorksheetStatistic']
export type RunPublic = Schemas['RunPublic']
export type EventPublic = Schemas['EventPublic']
export type AlertRulePublic = Schemas['AlertRulePublic']
export type AlertRuleBody = Schemas['AlertRuleBody']
export type DeliveryPublic = Schemas['DeliveryPublic']
export type RunReport = Schemas['RunReport']
export type RunReportClient = Schemas['RunReportClient']
export type DiagnosisLink = Schemas['DiagnosisLink']

export const api = createClient<paths>({ baseUrl: '' })

/** The API's error body is {detail: string}; turn any failure into an Error with that text. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message)
  }
}

export function unwrap<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.data !== undefined && r.response.ok) return r.data
  const detail = (r.error as { detail?: unknown } | undefined)?.detail
  const text = typeof detail === 'string' ? detail : `${r.response.status} ${r.response.statusText}`
  throw new ApiError(text, r.response.status)
}
