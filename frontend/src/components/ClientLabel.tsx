// A client in a table or a heading: its name when it has one, with the address on hover; the
// address itself (monospaced) when it has none.
import type { Names } from '../lib/names'

export function ClientLabel({ address, names, testId }: { address: string; names: Names | undefined; testId?: string }) {
  const name = names?.[address]
  if (!name)
    return (
      <span className="mono" data-testid={testId}>
        {address}
      </span>
    )
  return (
    <span className="client-named" title={address} data-address={address} data-testid={testId}>
      {name}
    </span>
  )
}
