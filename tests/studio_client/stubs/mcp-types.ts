// Stand-in for Hermes Studio's services/hermes/mcp-types (written for this
// harness): client.ts imports only this type.
export interface McpActionResponse {
  ok: boolean
  error?: string
  [key: string]: unknown
}
