// WS /api/v1/live: one connection for the page, many subscriptions (protocol in docs/API.md).
// Reconnects with back-off and subscribes again to everything that is still wanted.
import { useEffect, useRef, useSyncExternalStore } from 'react'
import type { LiveMessage } from '../charts/timeseries/model'

export interface LiveRequest {
  metric: string
  by: string | null
  where: Record<string, string[]>
  keys: string[]
}

type Handler = (m: LiveMessage) => void
type ErrorHandler = (error: string) => void

interface Sub {
  req: LiveRequest
  onMessage: Handler
  onError: ErrorHandler
}

/** idle: nothing subscribed (no connection needed); closed: lost, reconnecting. */
export type LiveState = 'idle' | 'connecting' | 'open' | 'closed'

class LiveConnection {
  private ws: WebSocket | null = null
  private subs = new Map<string, Sub>()
  private seq = 0
  private retry = 0
  private timer: ReturnType<typeof setTimeout> | null = null
  private listeners = new Set<() => void>()
  state: LiveState = 'idle'

  subscribe(req: LiveRequest, onMessage: Handler, onError: ErrorHandler): () => void {
    const id = `s${++this.seq}`
    this.subs.set(id, { req, onMessage, onError })
    this.ensureOpen()
    this.sendSubscribe(id)
    return () => {
      this.subs.delete(id)
      this.send({ op: 'unsubscribe', id })
      if (this.subs.size === 0) this.closeSoon()
    }
  }

  /** Close an unused connection after a moment (a re-render often subscribes again at once). */
  private closeSoon() {
    setTimeout(() => {
      if (this.subs.size === 0 && this.ws) this.ws.close()
    }, 2_000)
  }

  onState(fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  private setState(s: LiveState) {
    this.state = s
    this.listeners.forEach((fn) => fn())
  }

  private url(): string {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:'
    return `${proto}//${location.host}/api/v1/live`
  }

  private ensureOpen() {
    if (this.ws || this.timer) return
    this.setState('connecting')
    const ws = new WebSocket(this.url())
    this.ws = ws
    ws.onopen = () => {
      this.retry = 0
      this.setState('open')
      for (const id of this.subs.keys()) this.sendSubscribe(id)
    }
    ws.onmessage = (ev) => {
      let msg: Partial<LiveMessage> & { error?: string; subscribed?: boolean }
      try {
        msg = JSON.parse(String(ev.data))
      } catch {
        return
      }
      const sub = msg.id ? this.subs.get(msg.id) : undefined
      if (!sub) return
      if (msg.error) sub.onError(msg.error)
      else if (typeof msg.ts === 'number') sub.onMessage(msg as LiveMessage)
    }
    ws.onclose = () => {
      this.ws = null
      if (this.subs.size === 0) return this.setState('idle')
      this.setState('closed')
      const delay = Math.min(10_000, 500 * 2 ** this.retry++)
      this.timer = setTimeout(() => {
        this.timer = null
        if (this.subs.size) this.ensureOpen()
      }, delay)
    }
  }

  private sendSubscribe(id: string) {
    const sub = this.subs.get(id)
    if (!sub) return
    const { metric, by, where, keys } = sub.req
    this.send({ op: 'subscribe', id, metric, by, where, keys })
  }

  private send(msg: object) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg))
  }
}

export const live = new LiveConnection()

/** Subscribe while `req` is not null; a changed request (by value) subscribes again. */
export function useLive(req: LiveRequest | null, onMessage: Handler, onError: ErrorHandler) {
  const handlers = useRef({ onMessage, onError })
  handlers.current = { onMessage, onError }
  const key = req ? JSON.stringify(req) : null
  useEffect(() => {
    if (!key) return
    return live.subscribe(
      JSON.parse(key) as LiveRequest,
      (m) => handlers.current.onMessage(m),
      (e) => handlers.current.onError(e),
    )
  }, [key])
}

export function useLiveState(): LiveState {
  return useSyncExternalStore(
    (fn) => live.onState(fn),
    () => live.state,
  )
}
