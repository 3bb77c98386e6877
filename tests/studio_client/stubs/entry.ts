// Bundle entry (written for this harness): re-exports Studio's unchanged
// agent-bridge client and manager, which run.py copies next to it from the mirror.
export * from './services/hermes/agent-bridge/client'
export * from './services/hermes/agent-bridge/manager'
