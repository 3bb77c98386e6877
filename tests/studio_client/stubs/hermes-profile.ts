// Stand-in for Hermes Studio's services/hermes/hermes-profile (written for this
// harness): the two names client.ts imports. The active profile is
// $HERMES_PROFILE or "default"; "default" lives in HERMES_HOME itself, a named
// profile in HERMES_HOME/profiles/<name>.
import { join } from 'path'
import { detectHermesHome } from './hermes-path'

export function getActiveProfileName(): string {
  return (process.env.HERMES_PROFILE || '').trim() || 'default'
}

export function getProfileDir(profile?: string): string {
  const name = (profile || '').trim() || 'default'
  const home = detectHermesHome()
  return name === 'default' ? home : join(home, 'profiles', name)
}
