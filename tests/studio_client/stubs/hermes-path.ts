// Stand-in for Hermes Studio's services/hermes/hermes-path (written for this
// harness): the two names manager.ts imports.
import { homedir } from 'os'
import { join } from 'path'

export function detectHermesHome(): string {
  return (process.env.HERMES_HOME || '').trim() || join(homedir(), '.hermes')
}

export function getHermesBin(): string {
  return (process.env.HERMES_BIN || '').trim() || 'hermes'
}
