// A labelled local date and time, to the second (datetime-local's value: '2026-11-24T10:00:05').
export function DateTimeInput(props: { label: string; value: string; onChange: (v: string) => void; className: string; testId: string }) {
  return (
    <label className={props.className}>
      {props.label}{' '}
      <input type="datetime-local" step={1} value={props.value} onChange={(e) => props.onChange(e.target.value)} data-testid={props.testId} />
    </label>
  )
}
