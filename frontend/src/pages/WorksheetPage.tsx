// The worksheet: a toolbar and one card per statistic, all of it in the URL.
import { useEffect, useRef, useState } from 'react'
import { useMetrics } from '../api/hooks'
import { MenuButton } from '../components/MenuButton'
import { AddStatistic } from '../worksheet/AddStatistic'
import { HeatmapCard } from '../worksheet/HeatmapCard'
import { OpenWorksheet, SaveWorksheet } from '../worksheet/SaveOpen'
import { TimeseriesCard } from '../worksheet/TimeseriesCard'
import { useWorksheet } from '../state/useWorksheet'
import { pauseTime, statisticKeys, type Statistic } from '../state/url'
import { TimeToolbar } from '../worksheet/TimeToolbar'
import { readWorksheetFile, worksheetFile } from '../state/exchange'
import { fileName } from '../lib/csv'
import { saveText } from '../lib/download'
import { editableCopy } from '../lib/share'
import { ShareWorksheet } from '../worksheet/ShareWorksheet'

type Panel = 'add' | 'save' | 'open' | 'share' | null

export function WorksheetPage() {
  const { ws, warnings, update } = useWorksheet()
  const metrics = useMetrics()
  const [panel, setPanel] = useState<Panel>(null)
  const toggle = (p: Panel) => setPanel(panel === p ? null : p)
  const close = () => setPanel(null)
  // Warnings stay until dismissed, even after the URL is rewritten without the bad parts.
  const [shownWarnings, setShownWarnings] = useState<string[]>(warnings)
  useEffect(() => {
    if (warnings.length) setShownWarnings(warnings)
  }, [warnings])
  const [focus, setFocus] = useState<number | null>(null)
  const keys = statisticKeys(ws.statistics)
  const metricOf = (name: string) => metrics.data?.metrics.find((m) => m.name === name)

  // A paused link without its time pauses at the moment it is opened.
  useEffect(() => {
    if (ws.paused && ws.at === null) update((w) => ({ ...w, at: pauseTime(Date.now()) }), { replace: true })
  }, [ws.paused, ws.at, update])

  useEffect(() => {
    if (focus === null) return
    document.querySelectorAll('[data-testid="chart-card"]')[focus]?.scrollIntoView({ behavior: 'smooth', block: 'nearest' })
    setFocus(null)
  }, [focus, keys.length])

  const ro = ws.readOnly
  // a drill-down from a shared view is the viewer's own: it continues in an editable copy
  const insertAfter = (i: number, s: Statistic) => {
    update((w) => ({ ...(w.readOnly ? editableCopy(w) : w), statistics: [...w.statistics.slice(0, i + 1), s, ...w.statistics.slice(i + 1)] }))
    setFocus(i + 1)
  }
  const replaceAt = (i: number, s: Statistic) =>
    update((w) => ({ ...w, statistics: w.statistics.map((x, j) => (j === i ? s : x)) }), { replace: true })
  const removeAt = (i: number) => update((w) => ({ ...w, statistics: w.statistics.filter((_, j) => j !== i) }))
  const warningText = shownWarnings.join(' · ')
  const importer = useRef<HTMLInputElement>(null)
  const [importError, setImportError] = useState<string | null>(null)
  const exportName = ws.name ?? 'Untitled worksheet'
  async function importFile(file: File | undefined) {
    if (!file) return
    const r = readWorksheetFile(file.size > 1_000_000 ? '' : await file.text())
    if ('error' in r) return setImportError(`Cannot import ${file.name}: ${file.size > 1_000_000 ? 'it is larger than 1 MB' : r.error}`)
    setImportError(r.warnings.length ? `Imported ${file.name} in part: ${r.warnings.join(' · ')}` : null)
    update(() => r.state)
  }

  return (
    <main className="page">
      <div className="toolbar" data-testid="toolbar">
        <div className="toolbar-group">
          <h1 className="ws-name" data-testid="worksheet-name">
            {ws.name ?? 'Untitled worksheet'}
          </h1>
          {!ro && (
            <MenuButton
              label="+ Add statistic"
              primary
              open={panel === 'add' && !!metrics.data}
              onToggle={() => toggle('add')}
              testId="add-statistic-button"
              disabled={!metrics.data}
            >
              <AddStatistic
                metrics={metrics.data?.metrics ?? []}
                onClose={close}
                onAdd={(s) => {
                  close()
                  insertAfter(ws.statistics.length - 1, s)
                }}
              />
            </MenuButton>
          )}
        </div>
        <TimeToolbar view={ws} onChange={(v) => update((w) => ({ ...w, ...v }))} />
        <div className="toolbar-group">
          <MenuButton label="Share" open={panel === 'share'} onToggle={() => toggle('share')} testId="share-button">
            <ShareWorksheet ws={ws} onClose={close} />
          </MenuButton>
          {!ro && (
            <MenuButton label="Save" open={panel === 'save'} onToggle={() => toggle('save')} testId="save-button">
              <SaveWorksheet
                ws={ws}
                onClose={close}
                onSaved={(saved) => {
                  close()
                  update((w) => ({ ...w, id: saved.id, name: saved.name }), { replace: true })
                }}
              />
            </MenuButton>
          )}
          <button
            className="button"
            title="Save this worksheet as a JSON file"
            data-testid="export-worksheet"
            onClick={() => saveText(fileName(exportName, 'json'), worksheetFile(ws, exportName), 'application/json')}
          >
            Export
          </button>
          {!ro && (
            <button className="button" title="Open a worksheet from a JSON file" data-testid="import-worksheet" onClick={() => importer.current?.click()}>
              Import
            </button>
          )}
          <input
            ref={importer}
            type="file"
            accept="application/json,.json"
            hidden
            data-testid="import-file"
            onChange={(e) => {
              void importFile(e.target.files?.[0])
              e.target.value = ''
            }}
          />
          <MenuButton label="Open" open={panel === 'open'} onToggle={() => toggle('open')} testId="open-button">
            <OpenWorksheet
              onClose={close}
              onOpen={(opened) => {
                close()
                update(() => opened)
              }}
            />
          </MenuButton>
        </div>
      </div>

      {ro && (
        <div className="notice" role="status" data-testid="read-only">
          <span>
            A shared view, read-only{ws.paused && ws.at !== null ? ', frozen at the moment it was shared' : ''}. Drilling down or editing continues in a copy of
            your own.
          </span>
          <button className="button" onClick={() => update((w) => editableCopy(w))} data-testid="edit-copy">
            Edit a copy
          </button>
        </div>
      )}
      {warningText && (
        <div className="notice" role="status" data-testid="url-warnings">
          <span>Parts of this link could not be read: {warningText}</span>
          <button className="icon-button" aria-label="Dismiss" onClick={() => setShownWarnings([])}>
            ✕
          </button>
        </div>
      )}
      {metrics.error && <div className="error">Cannot read the metric catalog: {metrics.error.message}</div>}
      {importError && (
        <div className="error" role="alert" data-testid="import-error">
          {importError}
        </div>
      )}

      {ws.statistics.length === 0 && (
        <div className="empty big" data-testid="worksheet-empty">
          <div className="empty-title">This worksheet has no statistics yet.</div>
          <div className="empty-detail">
            Use <b>+ Add statistic</b> to chart a metric, e.g. NFS operations per second broken down by client, or open the{' '}
            <a href="/status">status page</a> and click a tile.
          </div>
        </div>
      )}

      <div className="cards">
        {ws.statistics.map((s, i) => {
          const props = {
            stat: s,
            view: ws,
            metric: metricOf(s.metric),
            // a chart drilled from an unsynced one shows the same time, unless it asks for its own
            onOpen: (next: Statistic) => insertAfter(i, s.time && !next.time ? { ...next, time: s.time } : next),
            onChange: (next: Statistic) => replaceAt(i, next),
            onRemove: ro ? undefined : () => removeAt(i),
          }
          return s.display === 'heatmap' ? (
            <HeatmapCard key={keys[i]} {...props} group="worksheet" />
          ) : (
            <TimeseriesCard key={keys[i]} {...props} group="worksheet" />
          )
        })}
      </div>
    </main>
  )
}
