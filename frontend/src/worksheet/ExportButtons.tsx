// A chart card's exports: its data as CSV (the range and tier shown) and its drawing as PNG.
import type { MutableRefObject } from 'react'
import { fileName } from '../lib/csv'
import { saveText, saveUrl } from '../lib/download'

export function ExportButtons({ title, csv, png }: { title: string; csv: (() => string) | null; png: MutableRefObject<(() => string) | null> }) {
  return (
    <div className="segmented small" role="group" aria-label="Export">
      <button
        disabled={!csv}
        title="Save the points shown (this range and tier) as CSV"
        data-testid="export-csv"
        onClick={() => csv && saveText(fileName(title, 'csv'), csv(), 'text/csv')}
      >
        CSV
      </button>
      <button title="Save the chart as a PNG image" data-testid="export-png" onClick={() => png.current && saveUrl(fileName(title, 'png'), png.current())}>
        PNG
      </button>
    </div>
  )
}
