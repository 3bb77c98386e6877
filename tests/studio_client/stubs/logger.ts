// Stand-in for Hermes Studio's packages/server/src/services/logger (written for
// this harness; Studio's own logger is pino). Same exported names as the two
// bridge files use: `logger` and `bridgeLogger`, pino-style methods taking
// (obj, msg, ...args) or (msg, ...args). Lines go to $STUDIO_CLIENT_LOG if set.
import { appendFileSync } from 'fs'
import { format } from 'util'

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'

function write(name: string, level: Level, args: unknown[]): void {
  const file = process.env.STUDIO_CLIENT_LOG
  if (!file) return
  let obj: unknown
  if (args.length && typeof args[0] !== 'string') obj = args.shift()
  const msg = args.length ? format(...(args as [string, ...unknown[]])) : ''
  let extra = ''
  if (obj !== undefined) {
    try {
      extra = ' ' + JSON.stringify(obj instanceof Error ? { message: obj.message, name: obj.name } : obj)
    } catch {
      extra = ' ' + String(obj)
    }
  }
  try {
    appendFileSync(file, `${new Date().toISOString()} ${name} ${level} ${msg}${extra}\n`)
  } catch {}
}

function makeLogger(name: string) {
  const make = (level: Level) => (...args: unknown[]) => write(name, level, args)
  return {
    trace: make('trace'),
    debug: make('debug'),
    info: make('info'),
    warn: make('warn'),
    error: make('error'),
    fatal: make('fatal'),
    child: () => makeLogger(name),
  }
}

export const logger = makeLogger('server')
export const bridgeLogger = makeLogger('bridge')
export default logger
