// Drives hermes-bridge through Hermes Studio's own AgentBridgeManager and
// AgentBridgeClient (bundled by run.py from the mirror, unchanged), the way
// Studio's run-chat code calls them. One line per flow: PASS/FAIL <flow>.
// Written for this harness; no Studio code in here.
import { createRequire } from 'module'
import { execFileSync } from 'child_process'
import { appendFileSync, existsSync, readFileSync } from 'fs'
import { join } from 'path'
import { setTimeout as sleep } from 'timers/promises'

const require = createRequire(import.meta.url)
const studio = require(process.env.STUDIO_BUNDLE)
const { AgentBridgeClient, AgentBridgeManager } = studio

const TMP = process.env.STUDIO_TMP
const HOME = process.env.HERMES_HOME
const PROFILE = 'default'
const ONLY = (process.env.STUDIO_CLIENT_FLOWS || '').split(',').map(s => s.trim()).filter(Boolean)

// ---------------------------------------------------------------- helpers

class Check extends Error {}
function ok(cond, what, detail) {
  if (!cond) {
    let extra = ''
    if (detail !== undefined) {
      try { extra = ': ' + JSON.stringify(detail).slice(0, 1500) } catch { extra = ': ' + String(detail) }
    }
    throw new Check(what + extra)
  }
}
function eq(actual, expected, what) {
  const a = JSON.stringify(actual)
  const e = JSON.stringify(expected)
  if (a !== e) throw new Check(`${what}: expected ${e.slice(0, 600)}, got ${a === undefined ? 'undefined' : a.slice(0, 600)}`)
}
function log(line) {
  if (process.env.STUDIO_CLIENT_LOG) appendFileSync(process.env.STUDIO_CLIENT_LOG, `${new Date().toISOString()} driver ${line}\n`)
}
let seq = 0
const sid = (name) => `sc-${name}-${process.pid}-${++seq}`

async function expectReject(promise, what) {
  try {
    const value = await promise
    throw new Check(`${what}: expected a rejection, got ${JSON.stringify(value).slice(0, 600)}`)
  } catch (err) {
    if (err instanceof Check) throw err
    return err
  }
}

async function waitFor(fn, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs
  let last
  while (Date.now() < deadline) {
    try {
      last = await fn()
      if (last) return last
    } catch (err) { last = err }
    await sleep(50)
  }
  throw new Check(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`)
}

const recordedPids = new Set()
function recordPid(manager) {
  const pid = manager.getRuntimeState().pid
  if (pid) {
    recordedPids.add(pid)
    try { appendFileSync(join(TMP, 'pids'), `${pid}\n`) } catch {}
  }
  return pid
}
function alive(pid) {
  try { process.kill(pid, 0); return true } catch { return false }
}

// The UI's way of consuming a run (rc/handle-bridge-run.ts): streamOutput, text
// from the stream.delta events when a chunk has any, else chunk.delta; the
// prompts (approval / clarify / compression) are answered while the chunk is
// being applied, before the next poll.
async function consume(client, runId, { onEvent, onChunk } = {}) {
  const chunks = []
  const events = []
  let text = ''
  let deltaText = ''
  let last = null
  for await (const chunk of client.streamOutput(runId)) {
    last = chunk
    chunks.push(chunk)
    deltaText += chunk.delta || ''
    const evs = Array.isArray(chunk.events) ? chunk.events : []
    const streamEvents = evs.filter(ev => ev.event === 'stream.delta')
    if (streamEvents.length) text += streamEvents.map(ev => String(ev.delta ?? '')).join('')
    else text += chunk.delta || ''
    for (const ev of evs) {
      events.push(ev)
      if (onEvent) await onEvent(ev, chunk)
    }
    if (onChunk) await onChunk(chunk, { text, events })
  }
  ok(last, `run ${runId} produced no output state`)
  return { last, chunks, events, text, deltaText }
}

async function runChat(client, sessionId, message, { history, instructions, options = {}, onEvent, onChunk, profile = PROFILE } = {}) {
  const started = await client.chat(sessionId, message, history, instructions, profile, options)
  ok(typeof started.run_id === 'string' && started.run_id, 'chat answers a run_id', started)
  eq(started.session_id, sessionId, 'chat session_id')
  const out = await consume(client, started.run_id, { onEvent, onChunk })
  return { started, ...out }
}

function named(events, name) { return events.filter(ev => ev.event === name) }

// What the UI's bridgeTerminalError (rc/handle-bridge-run.ts) treats as a failed run.
function uiRunFailed(chunk) {
  const result = (chunk.result && typeof chunk.result === 'object') ? chunk.result : {}
  if (chunk.status === 'error') return chunk.error || result.error || result.exception || result.message || result.final_response || 'Agent run failed'
  if (result.failed === true || result.completed === false) return 'Agent reported failure'
  return null
}

function expectComplete(run, expectedText, what) {
  if (run.last.status !== 'complete') {
    throw new Check(`${what}: final status: expected "complete", got ${JSON.stringify(run.last.status)} (run ${run.last.run_id}, error ${JSON.stringify(run.last.error)}, result ${JSON.stringify(run.last.result)?.slice(0, 1200)})`)
  }
  eq(run.last.done, true, `${what}: done`)
  eq(uiRunFailed(run.last), null, `${what}: the UI sees no failure`)
  if (expectedText !== undefined) {
    eq(run.text, expectedText, `${what}: streamed text`)
    eq(run.last.output, expectedText, `${what}: final chunk output`)
  }
}

// ---------------------------------------------------------------- flows

const flows = []
const flow = (name, fn, timeoutMs = 30000) => flows.push({ name, fn, timeoutMs })

let manager
let client

flow('start', async () => {
  manager = new AgentBridgeManager()
  await manager.start()
  const state = manager.getRuntimeState()
  ok(state.running && state.ready && !state.attached && state.pid, 'manager spawned and ready', state)
  recordPid(manager)
  eq(manager.endpoint, process.env.HERMES_AGENT_BRIDGE_ENDPOINT, 'endpoint')
  const readiness = await manager.checkReadiness()
  eq(readiness.status, 'ready', 'checkReadiness status')
  client = new AgentBridgeClient()
  const pong = await client.ping()
  ok(pong.ok === true, 'ping ok', pong)
})

flow('echo', async () => {
  const s = sid('echo')
  const run = await runChat(client, s, 'hello bridge')
  expectComplete(run, 'echo: hello bridge', 'echo')
  const ready = named(run.events, 'bridge.context.ready')
  ok(ready.length === 1 && run.events[0].event === 'bridge.context.ready', 'bridge.context.ready is the first event', run.events.map(e => e.event))
  const result = await client.getResult(run.started.run_id)
  eq(result.status, 'complete', 'get_result status')
  eq(result.output, 'echo: hello bridge', 'get_result output')
  eq(result.deltas.join(''), 'echo: hello bridge', 'get_result deltas')
})

flow('streaming', async () => {
  const s = sid('stream')
  const seen = []
  const run = await runChat(client, s, 'script:stream 20 40;say end', {
    onChunk: (chunk) => { if (chunk.delta) seen.push(chunk.delta) },
  })
  const expected = Array.from({ length: 20 }, (_, i) => `d${i} `).join('') + 'end'
  expectComplete(run, expected, 'streaming')
  eq(run.deltaText, expected, 'chunk.delta concatenation')
  ok(seen.length >= 3, 'text arrived over several polls (incremental streaming)', seen.length)
  const deltas = named(run.events, 'stream.delta').map(ev => ev.delta)
  eq(deltas.join(''), expected, 'stream.delta events carry the text in order')
  // cursors only grow, event_cursor counts the events
  let prev = 0
  for (const c of run.chunks) { ok(c.cursor >= prev, 'cursor is monotonic', run.chunks.map(x => x.cursor)); prev = c.cursor }
  eq(run.last.event_cursor, run.events.length, 'event_cursor equals the events delivered')
})

flow('tools', async () => {
  const s = sid('tools')
  const run = await runChat(client, s, 'script:say looking;tool terminal ls -la;say done')
  expectComplete(run, 'lookingdone', 'tools')  // two API calls: 'looking', then 'done'
  const started = named(run.events, 'tool.started')
  const completed = named(run.events, 'tool.completed')
  eq(started.length, 1, 'one tool.started')
  eq(completed.length, 1, 'one tool.completed')
  ok(typeof started[0].tool_call_id === 'string' && started[0].tool_call_id.length > 0, 'tool.started has an id', started[0])
  eq(completed[0].tool_call_id, started[0].tool_call_id, 'tool.completed id matches')
  eq(started[0].tool_name, 'terminal', 'tool_name')
  eq(started[0].args, { arg: 'ls -la' }, 'tool args')
  // the UI's output field: result ?? output ?? result_preview ?? preview
  const output = completed[0].result ?? completed[0].output ?? completed[0].result_preview ?? completed[0].preview
  ok(String(output).includes('ran terminal: ls -la'), 'tool output reaches the UI', completed[0])
  const order = run.events.map(e => e.event)
  ok(order.indexOf('tool.started') < order.indexOf('tool.completed'), 'started before completed', order)
  ok(order.includes('turn.boundary') && order.indexOf('turn.boundary') < order.indexOf('tool.started'), 'turn.boundary before the tool (the UI flushes text there)', order)
})

flow('progress_events', async () => {
  const s = sid('progress')
  const run = await runChat(client, s, 'script:status lifecycle Retrying in 3.0s (attempt 1/3)...;reason pondering deeply;think spinner text;say ok')
  expectComplete(run, 'ok', 'progress events')
  const status = named(run.events, 'status')
  eq(status.map(e => [e.kind, e.text]), [['lifecycle', 'Retrying in 3.0s (attempt 1/3)...']], 'status event (agent.event in the UI)')
  eq(named(run.events, 'reasoning.delta').map(e => e.text), ['pondering deeply'], 'reasoning.delta')
  eq(named(run.events, 'thinking.delta').map(e => e.text), [''], 'thinking.delta carries no text')
  const ready = run.events[0]
  eq(ready.event, 'bridge.context.ready', 'first event')
  for (const key of ['fixed_context_tokens', 'system_prompt_tokens', 'tool_count', 'system_prompt_chars']) {
    ok(typeof ready[key] === 'number', `bridge.context.ready.${key} (the UI caches the fixed context)`, ready)
  }
  eq(ready.session_id, s, 'bridge.context.ready session_id')
  eq(ready.profile, PROFILE, 'bridge.context.ready profile')
})

async function approvalRun(kind, choice) {
  const s = sid(`approve-${kind}-${choice}`)
  const answers = []
  const run = await runChat(client, s, `script:approve-${kind} rm -rf /tmp/x;say after`, {
    onEvent: async (ev) => {
      if (ev.event !== 'approval.requested') return
      answers.push({ ev, reply: await client.approvalRespond(String(ev.approval_id), choice) })
    },
  })
  eq(answers.length, 1, `${kind}: one approval.requested`)
  const { ev, reply } = answers[0]
  ok(typeof ev.approval_id === 'string' && ev.approval_id, `${kind}: approval_id`, ev)
  eq(ev.command, 'rm -rf /tmp/x', `${kind}: command`)
  ok(Array.isArray(ev.choices) && ev.choices.includes('once') && ev.choices.includes('deny'), `${kind}: choices`, ev)
  ok(typeof ev.timeout_ms === 'number' && ev.timeout_ms > 0, `${kind}: timeout_ms`, ev)
  eq(ev.allow_permanent, true, `${kind}: allow_permanent`)
  eq(ev.choices, ['once', 'session', 'always', 'deny'], `${kind}: choices`)
  eq(typeof ev.description, 'string', `${kind}: description`)
  eq(reply.resolved, true, `${kind}: approval_respond resolved`)
  eq(reply.choice, choice, `${kind}: approval_respond choice`)
  const resolved = named(run.events, 'approval.resolved')
  ok(resolved.some(r => r.approval_id === ev.approval_id && r.choice === choice), `${kind}: approval.resolved event`, run.events.map(e => e.event))
  const blocked = choice === 'deny'
  expectComplete(run, `choice=${choice} after`, `${kind} ${choice}`)
  const tool = named(run.events, 'tool.completed')[0]
  ok(tool, `${kind}: the tool ran after the answer`, run.events.map(e => e.event))
  const out = String(tool.result ?? tool.result_preview)
  ok(blocked ? out.includes('BLOCKED: denied') : out.includes('ran terminal: rm -rf /tmp/x'), `${kind}: tool result follows the choice`, tool)
}

flow('approvals', async () => {
  await approvalRun('gw', 'once')
  await approvalRun('gw', 'deny')
  await approvalRun('cli', 'once')
  await approvalRun('cli', 'deny')
})

flow('approvals_two_cards', async () => {
  // two gateway prompts of one session pending at once; the user answers the
  // second card first: each answer must reach its own command
  const s = sid('approve-pair')
  const pending = []
  const replies = []
  const run = await runChat(client, s, 'script:danger-pair rm -rf /a|rm -rf /b', {
    onEvent: async (ev) => {
      if (ev.event !== 'approval.requested') return
      pending.push(ev)
      if (pending.length < 2) return
      const byCmd = Object.fromEntries(pending.map(p => [p.command, p]))
      replies.push(await client.approvalRespond(String(byCmd['rm -rf /b'].approval_id), 'deny'))
      replies.push(await client.approvalRespond(String(byCmd['rm -rf /a'].approval_id), 'once'))
    },
  })
  eq(pending.map(p => p.command).sort(), ['rm -rf /a', 'rm -rf /b'], 'two approval.requested')
  ok(pending[0].approval_id !== pending[1].approval_id, 'distinct approval ids', pending)
  eq(replies.map(r => [r.resolved, r.choice]), [[true, 'deny'], [true, 'once']], 'both answers resolved')
  expectComplete(run, 'pair=rm -rf /a:once,rm -rf /b:deny ', 'each answer reached its own command')
})

flow('compression', async () => {
  const s = sid('compress')
  const history = [
    { role: 'user', content: 'old question' },
    { role: 'assistant', content: 'old answer' },
  ]
  const requests = []
  const run = await runChat(client, s, 'script:compress;say done', {
    history,
    instructions: 'keep it short',
    onEvent: async (ev) => {
      if (ev.event !== 'bridge.compression.requested') return
      ok(Array.isArray(ev.messages), 'compression request carries messages', ev)
      const reply = await client.compressionRespond(String(ev.request_id), {
        messages: [{ role: 'user', content: '[summary] old question / old answer' }],
        system_message: 'keep it short',
      })
      requests.push({ ev, reply })
    },
  })
  eq(requests.length, 1, 'one bridge.compression.requested')
  const { ev, reply } = requests[0]
  eq(reply.handled, true, 'compression_respond handled')
  eq(ev.message_count, 3, 'message_count (history + this message)')
  eq(ev.approx_tokens, 1234, 'approx_tokens')
  const completed = named(run.events, 'bridge.compression.completed')
  eq(completed.length, 1, 'one bridge.compression.completed')
  eq(completed[0].request_id, ev.request_id, 'completed request_id')
  eq(completed[0].compressed, true, 'compressed')
  eq(completed[0].result_messages, 1, 'result_messages')
  expectComplete(run, "compressed 1 system='keep it short' done", 'compression')
})

flow('compression_error', async () => {
  // the UI's failure path: compressionRespond(id, {error})
  const s = sid('compress-err')
  const run = await runChat(client, s, 'script:compress;say never', {
    onEvent: async (ev) => {
      if (ev.event === 'bridge.compression.requested') await client.compressionRespond(String(ev.request_id), { error: 'summarizer down' })
    },
  })
  const failed = named(run.events, 'bridge.compression.failed')
  eq(failed.length, 1, 'one bridge.compression.failed')
  eq(failed[0].error, 'summarizer down', 'failed error')
  eq(run.last.status, 'error', 'the turn fails')
  ok(String(uiRunFailed(run.last)).includes('summarizer down'), 'the UI shows the error', run.last)
})

// lib/context-compressor/index.ts: while the chat run waits in
// bridge.compression.requested, the UI summarizes through a chat with wait on
// a worker_key of its own, then answers compression_respond.
async function summarize(profile, text) {
  const bridge = new AgentBridgeClient({ timeoutMs: 30000 + 15000 })
  const sessionId = `compress_${Date.now().toString(36)}_${Math.random().toString(16).slice(2, 14)}`
  const workerKey = `${profile}:compression:${sessionId}`
  try {
    const result = await bridge.request({
      action: 'chat',
      session_id: sessionId,
      message: `script:sleep 1500;say ${text}`,
      conversation_history: [{ role: 'user', content: 'summarize this conversation' }],
      profile,
      worker_key: workerKey,
      source: 'api_server',
      wait: true,
      timeout: 30,
    }, { timeoutMs: 45000 })
    if (result.status === 'error') throw new Error(result.error || 'Summarization bridge run failed')
    eq(result.status, 'complete', 'summarizer chat with wait: status')
    ok(Array.isArray(result.deltas) && Array.isArray(result.events), 'summarizer answer has the get_result shape', result)
    const output = String(result.result?.final_response || result.output || '').trim()
    return { output, result }
  } finally {
    const d = await bridge.destroy(sessionId, profile, workerKey).catch(e => ({ error: e.message }))
    ok(d.ok === true, 'summarizer destroy with worker_key', d)
  }
}

flow('compression_summarizer', async () => {
  const s = sid('compress-sum')
  let summary = null
  let pingMs = null
  const run = await runChat(client, s, 'script:say before;compress;say after', {
    history: [{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }],
    onEvent: async (ev) => {
      if (ev.event !== 'bridge.compression.requested') return
      const t0 = Date.now()
      const pending = summarize(PROFILE, 'SUMMARY-OK')
      await sleep(100)
      await client.ping()  // a chat with wait must not block other clients
      pingMs = Date.now() - t0
      summary = await pending
      await client.compressionRespond(String(ev.request_id), { messages: [{ role: 'user', content: summary.output }] })
    },
  })
  ok(summary, 'the compression request was answered')
  eq(summary.output, 'SUMMARY-OK', 'summarizer output')
  ok(pingMs < 1000, 'ping answered while a chat with wait (1.5 s) is pending', pingMs)
  eq(named(run.events, 'bridge.compression.completed').length, 1, 'compression completed')
  expectComplete(run, 'beforecompressed 1 system=None after', 'compression with the summarizer')
}, 45000)

flow('ui_edge_calls', async () => {
  // reattach lookup of a session the bridge never saw (rc/index.ts)
  const unknown = await client.statusIfLoaded(sid('never'), PROFILE, { timeoutMs: 1000 })
  eq([unknown.running, unknown.exists], [false, false], 'status_if_loaded of an unknown session')
  const noProfile = await client.statusIfLoaded(sid('never'), undefined, { timeoutMs: 1000 })
  eq([noProfile.running, noProfile.loaded], [false, false], 'status_if_loaded without profile')
  // a loaded idle session
  const s = sid('edge')
  expectComplete(await runChat(client, s, 'hi'), 'echo: hi', 'edge: chat')
  const st = await client.statusIfLoaded(s, PROFILE, { timeoutMs: 1000 })
  eq([st.exists, st.running, st.loaded, st.current_run_id ?? null], [true, false, true, null], 'status_if_loaded of an idle session')
  ok(typeof st.message_count === 'number', 'message_count', st)
  // abort of an idle session: synced immediately
  const intr = await client.interrupt(s, 'Aborted by user', PROFILE)
  eq([intr.status, intr.synced], ['interrupted', true], 'interrupt of an idle session')
  expectComplete(await runChat(client, s, 'still fine'), 'echo: still fine', 'chat after an idle interrupt')
})

flow('history', async () => {
  const s = sid('history')
  const first = await runChat(client, s, 'first')
  expectComplete(first, 'echo: first', 'history turn 1')
  const history = [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'echo: first' }]
  const second = await runChat(client, s, 'script:history', { history })
  expectComplete(second, 'history=2 ', 'history turn 2 sees the conversation_history')
  const h = await client.getHistory(s, PROFILE)
  ok(Array.isArray(h.history), 'get_history answers a list', h)
  eq(h.session_id, s, 'get_history session_id')
  const roles = h.history.map(m => m.role)
  eq(roles, ['user', 'assistant', 'user', 'assistant'], 'history roles')
  eq(h.history.map(m => m.content), ['first', 'echo: first', 'script:history', 'history=2 '], 'history contents')
})

flow('instructions', async () => {
  const s = sid('instr')
  const run = await runChat(client, s, 'script:sysmsg', { instructions: 'You are the Studio test persona.' })
  expectComplete(run, 'system=You are the Studio test persona. ', 'instructions')
})

flow('model_provider', async () => {
  const s = sid('model')
  const run = await runChat(client, s, 'script:model', { options: { model: 'studio-model-a', provider: 'fake' } })
  expectComplete(run, 'model=studio-model-a ', 'chat model')
  const ready = named(run.events, 'bridge.context.ready')[0]
  eq([ready.model, ready.provider], ['studio-model-a', 'fake'], 'bridge.context.ready model/provider')
  const status = await client.status(s, PROFILE)
  eq([status.config?.model, status.config?.provider], ['studio-model-a', 'fake'], 'status config model/provider')
  // a different model on the next chat of the same session (hot switch)
  const run2 = await runChat(client, s, 'script:model', { options: { model: 'studio-model-b', provider: 'fake' } })
  expectComplete(run2, 'model=studio-model-b ', 'chat model switch')
  // no model: the session keeps its model; a fresh session gets config.yaml's default
  const run3 = await runChat(client, sid('model-default'), 'script:model')
  expectComplete(run3, 'model=fake-model ', 'default model from config.yaml')
})

flow('multimodal', async () => {
  const s = sid('mm')
  const pixel = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
  // as convertContentBlocksForAgent builds it, storage as contentBlocksToString
  const uiBlocks = [{ type: 'text', text: 'describe this' }, { type: 'image', path: '/tmp/p.png', name: 'p.png' }]
  const message = [
    { type: 'text', text: 'describe this' },
    { type: 'text', text: '[Attached image: p.png]\nLocal image path for tools: /tmp/p.png' },
    { type: 'image_url', image_url: { url: pixel } },
  ]
  const storage = JSON.stringify(uiBlocks)
  const run = await runChat(client, s, message, { options: { storage_message: storage } })
  expectComplete(run, 'echo: describe this [Attached image: p.png]\nLocal image path for tools: /tmp/p.png', 'multimodal')
  // the user row Hermes stores is the storage_message
  const db = join(HOME, 'state.db')
  const rows = JSON.parse(execFileSync('/usr/bin/python3', ['-c', `
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(json.dumps([list(r) for r in c.execute("SELECT role, content FROM messages WHERE session_id=? ORDER BY id", (sys.argv[2],))]))
`, db, s], { encoding: 'utf-8' }))
  ok(rows.length >= 2, 'state.db has the turn', rows)
  eq(rows[0], ['user', storage], 'state.db user row is the storage_message')
  eq(rows.filter(r => r[0] === 'user').length, 1, 'one user row')
})

flow('failing_turn', async () => {
  const s = sid('fail')
  const run = await runChat(client, s, 'script:say partial;raise boom in the agent')
  eq(run.last.status, 'error', 'status error')
  eq(run.last.done, true, 'done')
  ok(String(run.last.error).includes('boom in the agent'), 'chunk.error carries the exception', run.last)
  ok(String(uiRunFailed(run.last)).includes('boom in the agent'), 'the UI reports the error', run.last)
  const result = await client.getResult(run.started.run_id)
  eq(result.status, 'error', 'get_result status')
  ok(String(result.error).includes('boom in the agent'), 'get_result error', result)
  // the session is usable afterwards
  expectComplete(await runChat(client, s, 'again'), 'echo: again', 'chat after a failed turn')
})

flow('busy', async () => {
  const s = sid('busy')
  const started = await client.chat(s, 'script:sleep 1500;say slept', undefined, undefined, PROFILE)
  const err = await expectReject(client.chat(s, 'second', undefined, undefined, PROFILE), 'second chat on a running session')
  ok(/already running/.test(err.message), 'the error says already running', err.message)
  const run = await consume(client, started.run_id)
  eq(run.last.status, 'complete', 'the first run completes')
  eq(run.last.output, 'slept', 'first run output')
})

flow('abort', async () => {
  const s = sid('abort')
  const started = await client.chat(s, 'script:stream 400 25;say never', undefined, undefined, PROFILE)
  let pending = null
  const run = await consume(client, started.run_id, {
    onChunk: async (chunk, acc) => {
      if (pending || !acc.text.includes('d5 ')) return
      // rc/abort.ts (its own socket handler, concurrent with the polling):
      // interrupt, then goalPause
      pending = (async () => {
        const reply = await client.interrupt(s, 'Aborted by user', PROFILE)
        let pause
        try { pause = await client.goalPause(s, 'user-interrupted', PROFILE) } catch (e) { pause = { error: e.message } }
        return [reply, pause]
      })()
    },
  })
  ok(pending, 'interrupt was sent')
  const [interruptReply, goalPause] = await pending
  eq([interruptReply.status, interruptReply.session_id, interruptReply.synced], ['interrupted', s, true], 'interrupt answer')
  eq(run.last.status, 'interrupted', 'the run ends interrupted')
  eq(run.last.done, true, 'done')
  eq(uiRunFailed(run.last), null, 'the UI counts it as completed (not failed)')
  ok(!run.last.output.includes('never'), 'the turn stopped', run.last.output)
  ok(goalPause && goalPause.ok === true, 'goal_pause after interrupt answers ok', goalPause)
  const st = await client.statusIfLoaded(s, PROFILE, { timeoutMs: 1000 })
  eq(st.running, false, 'session no longer running')
  expectComplete(await runChat(client, s, 'after abort'), 'echo: after abort', 'chat after abort')
})

async function abortWhilePrompted(kind, script, promptEvent) {
  const s = sid(`abort-${kind}`)
  const started = await client.chat(s, script, undefined, undefined, PROFILE)
  let pending = null
  const t0 = Date.now()
  const run = await consume(client, started.run_id, {
    onEvent: async (ev) => {
      if (ev.event !== promptEvent || pending) return
      // the user presses stop instead of answering (rc/abort.ts, a socket
      // handler of its own: the run's polling goes on meanwhile)
      pending = client.interrupt(s, 'Aborted by user', PROFILE)
    },
  })
  ok(pending, `${kind}: the prompt came and interrupt was sent`)
  const interruptReply = await pending
  eq([interruptReply.status, interruptReply.synced], ['interrupted', true], `${kind}: interrupt answer (synced:false makes the UI show abort.timeout and destroy the session)`)
  eq(run.last.status, 'interrupted', `${kind}: the run ends interrupted`)
  ok(Date.now() - t0 < 5000, `${kind}: the stop took under 5 s`, Date.now() - t0)
  expectComplete(await runChat(client, s, 'after'), 'echo: after', `${kind}: chat after the abort`)
}

flow('abort_during_approval', async () => {
  await abortWhilePrompted('gw', 'script:approve-gw rm -rf /;say never', 'approval.requested')
  await abortWhilePrompted('cli', 'script:approve-cli rm -rf /;say never', 'approval.requested')
}, 40000)

flow('abort_during_clarify', async () => {
  await abortWhilePrompted('clarify', 'script:clarify Sure?|yes,no;say never', 'clarify.requested')
}, 40000)

flow('large_output', async () => {
  const s = sid('large')
  const run = await runChat(client, s, 'script:flood 3 64')
  expectComplete(run, undefined, 'large output')
  const size = 3 * 1024 * 1024
  eq(run.text.length, size, 'streamed text length')
  eq(run.last.output.length, size, 'final output length')
  ok(/^f+ (f+ )*$/.test(run.text), 'flood text intact')
}, 60000)

flow('steer', async () => {
  const s = sid('steer')
  const started = await client.chat(s, 'script:steer-wait 800', undefined, undefined, PROFILE)
  await sleep(150)
  const reply = await client.steer(s, 'turn left')  // rc/session-command.ts sends no profile
  eq([reply.status, reply.accepted, reply.text], ['queued', true, 'turn left'], 'steer answer')
  const run = await consume(client, started.run_id)
  eq(run.last.status, 'complete', 'status')
  eq(run.last.output, 'steered=turn left ', 'the agent got the steer')
})

flow('destroy', async () => {
  const s = sid('destroy')
  const run = await runChat(client, s, 'bye')
  expectComplete(run, 'echo: bye', 'destroy: chat')
  const reply = await client.destroy(s, PROFILE)
  eq([reply.session_id, reply.destroyed], [s, true], 'destroy answer')
  const st = await client.statusIfLoaded(s, PROFILE, { timeoutMs: 1000 })
  eq([st.exists, st.running], [false, false], 'status_if_loaded after destroy')
  const again = await client.destroy(s, PROFILE)
  eq(again.destroyed, false, 'a second destroy destroys nothing')
  const result = await client.getResult(run.started.run_id)
  eq(result.output, 'echo: bye', 'the finished run stays readable')
  expectComplete(await runChat(client, s, 'reborn'), 'echo: reborn', 'chat on a destroyed session id')
})

flow('unicode', async () => {
  const s = sid('uni')
  const text = 'héllo wörld — 世界 🎉 😀 Привет עברית \u00e9\u0301 tab\tquote"back\\slash'
  const run = await runChat(client, s, text)
  expectComplete(run, `echo: ${text}`, 'unicode echo')
  const run2 = await runChat(client, s, 'script:say ünïcödé 🚀 ok')
  expectComplete(run2, 'ünïcödé 🚀 ok', 'unicode script')
  const run3 = await runChat(client, s, 'script:surrogate')
  expectComplete(run3, 'bad\uFFFDtext ', 'lone surrogate becomes U+FFFD')
  const h = await client.getHistory(s, PROFILE)
  eq(h.history.find(m => m.role === 'user')?.content, 'script:surrogate', 'history is the last turn')
})

flow('concurrency', async () => {
  const n = 6
  const ids = Array.from({ length: n }, (_, i) => sid(`conc${i}`))
  const runs = await Promise.all(ids.map((s, i) => runChat(client, s, `script:stream 12 40;say sess-${i}`)))
  runs.forEach((run, i) => {
    const expected = Array.from({ length: 12 }, (_, k) => `d${k} `).join('') + `sess-${i}`
    expectComplete(run, expected, `concurrent session ${i}`)
  })
  const results = await Promise.all(runs.map(r => client.getResult(r.started.run_id)))
  const latestStart = Math.max(...results.map(r => r.started_at))
  const earliestEnd = Math.min(...results.map(r => r.ended_at))
  ok(latestStart < earliestEnd, 'all runs were live at the same time', results.map(r => [r.started_at, r.ended_at]))
  // and the same with parallel one-shot calls in between
  const pings = await Promise.all(Array.from({ length: 10 }, () => client.ping()))
  ok(pings.every(p => p.ok), 'parallel pings')
})

flow('concurrent_first_turns', async () => {
  // many sessions' first turns ending together: each starts hermes' title
  // thread at the same moment (a user with several new chats at once)
  const failures = []
  for (let round = 0; round < 4; round++) {
    const ids = Array.from({ length: 16 }, (_, i) => sid(`first${round}-${i}`))
    const runs = await Promise.all(ids.map((s, i) => runChat(client, s, `new chat ${round}-${i}`)))
    runs.forEach((run, i) => {
      if (run.last.status !== 'complete' || run.text !== `echo: new chat ${round}-${i}`) {
        failures.push({ run_id: run.started.run_id, status: run.last.status, error: run.last.error, text: run.text })
      }
    })
  }
  ok(failures.length === 0, `${failures.length} of 64 concurrent first turns did not complete`, failures.slice(0, 3))
}, 60000)

flow('reattach', async () => {
  const s = sid('reattach')
  const total = 40
  const started = await client.chat(s, `script:stream ${total} 50`, undefined, undefined, PROFILE)
  // the old web process streams a part, then dies
  let persisted = ''
  for await (const chunk of client.streamOutput(started.run_id)) {
    persisted += chunk.delta || ''
    if (persisted.length >= 20 || chunk.done) break
  }
  ok(persisted.length > 0, 'the first web process saw output')
  // a new web process: a new manager attaches to the running bridge, a new client
  const manager2 = new AgentBridgeManager()
  await manager2.start()
  const state2 = manager2.getRuntimeState()
  ok(state2.attached && state2.ready && !state2.pid, 'the new manager attaches, spawning nothing', state2)
  const client2 = new AgentBridgeClient()
  const status = await client2.statusIfLoaded(s, PROFILE, { timeoutMs: 1000 })
  eq([status.running, status.current_run_id], [true, started.run_id], 'status_if_loaded: running with current_run_id')
  // rc/handle-bridge-run.ts resumeBridgeRun
  const snapshot = await client2.getResult(started.run_id)
  const deltas = Array.isArray(snapshot.deltas) ? snapshot.deltas.map(String) : []
  const output = typeof snapshot.output === 'string' ? snapshot.output : deltas.join('')
  ok(output.startsWith(persisted), 'snapshot output extends what was shown', { output, persisted })
  eq(deltas.join(''), output, 'snapshot deltas join to output')
  let text = persisted + output.slice(persisted.length)
  let cursor = deltas.length
  let eventCursor = Array.isArray(snapshot.events) ? snapshot.events.length : 0
  let last
  for (;;) {
    const chunk = await client2.getOutput(started.run_id, cursor, eventCursor)
    const evDeltas = (chunk.events || []).filter(e => e.event === 'stream.delta').map(e => e.delta).join('')
    eq(evDeltas, chunk.events.some(e => e.event === 'stream.delta') ? chunk.delta : '', 'stream.delta events agree with chunk.delta')
    text += chunk.delta
    cursor = chunk.cursor
    eventCursor = chunk.event_cursor
    last = chunk
    if (chunk.done) break
    await sleep(100)
  }
  const expected = Array.from({ length: total }, (_, i) => `d${i} `).join('')
  eq(last.status, 'complete', 'resumed run completes')
  eq(text, expected, 'resumed text is complete, nothing duplicated')
  eq(last.output, expected, 'final output')
})

flow('reattach_approval', async () => {
  // the web process restarts while an approval card is open; the user answers
  // it from the new process (the card comes back from Studio's replay state)
  const s = sid('reattach-approve')
  const started = await client.chat(s, 'script:approve-gw rm -rf /srv;say after', undefined, undefined, PROFILE)
  let request = null
  for await (const chunk of client.streamOutput(started.run_id)) {
    request = (chunk.events || []).find(e => e.event === 'approval.requested')
    if (request || chunk.done) break
  }
  ok(request, 'the first process saw approval.requested')
  const client2 = new AgentBridgeClient()
  const status = await client2.statusIfLoaded(s, PROFILE, { timeoutMs: 1000 })
  eq([status.running, status.current_run_id], [true, started.run_id], 'status_if_loaded while the approval is pending')
  const snapshot = await client2.getResult(started.run_id)
  const reply = await client2.approvalRespond(String(request.approval_id), 'once')
  eq(reply.resolved, true, 'the new process resolves the approval')
  let last
  let cursor = snapshot.deltas.length
  let eventCursor = snapshot.events.length
  let text = snapshot.output
  for (;;) {
    last = await client2.getOutput(started.run_id, cursor, eventCursor)
    text += last.delta
    cursor = last.cursor
    eventCursor = last.event_cursor
    if (last.done) break
    await sleep(100)
  }
  eq(last.status, 'complete', 'the run completes')
  eq(text, 'choice=once after', 'resumed text')
})

flow('context_estimate', async () => {
  const s = sid('ctx')
  const est = await client.contextEstimate(s, [], 'Be brief.', PROFILE, { model: 'fake-model', provider: 'fake' })
  eq(est.session_id, s, 'session_id')
  eq([est.profile, est.model, est.provider], [PROFILE, 'fake-model', 'fake'], 'profile/model/provider')
  ok(typeof est.fixed_context_tokens === 'number' && est.fixed_context_tokens > 0, 'fixed_context_tokens (the UI caches it)', est)
  for (const key of ['system_prompt_tokens', 'tool_tokens', 'system_prompt_chars', 'tool_count', 'message_count']) {
    ok(typeof est[key] === 'number', `${key} is a number`, est)
  }
  ok(Array.isArray(est.tool_names), 'tool_names', est)
})

flow('command_goal', async () => {
  const s = sid('goal')
  expectComplete(await runChat(client, s, 'start'), 'echo: start', 'goal: chat')
  const set = await client.command(s, '/goal ship the release', PROFILE)
  eq([set.handled, set.type, set.action, set.command], [true, 'goal', 'set', 'goal'], 'goal set answer')
  eq(set.kickoff_prompt, 'ship the release', 'kickoff_prompt')
  ok(String(set.message).startsWith('⊙ Goal set (') && String(set.message).includes('ship the release'), 'set message', set)
  ok(typeof set.max_turns === 'number', 'max_turns', set)
  const status = await client.command(s, 'goal status', PROFILE)  // the UI sends it without the slash
  eq([status.handled, status.action], [true, 'goal_status'], 'goal status')
  ok(String(status.message).includes('ship the release'), 'status line names the goal', status)
  // goal_evaluate after a turn (rc/handle-bridge-run.ts)
  const ev1 = await client.goalEvaluate(s, 'still working on it', PROFILE)
  eq([ev1.handled, ev1.active, ev1.should_continue, ev1.verdict], [true, true, true, 'continue'], 'goal_evaluate: continue')
  ok(typeof ev1.continuation_prompt === 'string' && ev1.continuation_prompt, 'continuation_prompt', ev1)
  // goal_pause (rc/abort.ts)
  const pause = await client.goalPause(s, 'user-interrupted', PROFILE)
  eq([pause.handled, pause.action, pause.active, pause.reason], [true, 'pause', false, 'user-interrupted'], 'goal_pause answer')
  eq(pause.message, '⏸ Goal paused: ship the release', 'goal_pause message')
  eq(pause.clear_goal_continuations, true, 'clear_goal_continuations')
  const inactive = await client.goalEvaluate(s, 'whatever', PROFILE)
  eq([inactive.handled, inactive.active, inactive.should_continue, inactive.verdict], [true, false, false, 'inactive'], 'goal_evaluate on a paused goal')
  const resume = await client.command(s, 'goal resume', PROFILE)
  eq([resume.action, resume.message], ['resume', '▶ Goal resumed: ship the release'], 'goal resume')
  const done = await client.goalEvaluate(s, 'all good, GOAL DONE', PROFILE)
  eq([done.verdict, done.should_continue], ['done', false], 'goal_evaluate: done')
  const clear = await client.command(s, 'goal clear', PROFILE)
  eq([clear.action, clear.clear_goal_continuations], ['clear', true], 'goal clear')
  const unknown = await client.command(s, '/nosuchcommand arg', PROFILE)
  eq(unknown.handled, false, 'an unknown command is not handled')
})

flow('switch_session_model', async () => {
  // controllers/hermes/sessions.ts: its own client, 5000 ms, no connect retry
  const quick = new AgentBridgeClient({ timeoutMs: 5000, connectRetryMs: 0 })
  const notLoaded = await quick.switchSessionModel(sid('sw-none'), 'other-model', 'fake', PROFILE)
  eq([notLoaded.loaded, notLoaded.switched, notLoaded.reason], [false, false, 'session_not_loaded'], 'unloaded session')
  const s = sid('sw')
  expectComplete(await runChat(client, s, 'script:model'), 'model=fake-model ', 'switch: first chat')
  const sw = await quick.switchSessionModel(s, 'switched-model', 'fake', PROFILE)
  eq([sw.session_id, sw.model, sw.loaded, sw.switched], [s, 'switched-model', true, true], 'idle switch')
  const st = await client.status(s, PROFILE)
  eq(st.config?.model, 'switched-model', 'status shows the new model')
  const after = await runChat(client, s, 'who are you')
  expectComplete(after, undefined, 'chat after switch')
  ok(after.text.startsWith('echo: [Note: model was just switched from fake-model to switched-model') && after.text.endsWith('who are you'),
    'the switch note is prepended to the next message', after.text)
  // a running session defers the switch
  const started = await client.chat(s, 'script:sleep 600;model', undefined, undefined, PROFILE)
  await sleep(100)
  const deferred = await quick.switchSessionModel(s, 'deferred-model', 'fake', PROFILE)
  eq([deferred.loaded, deferred.switched, deferred.deferred, deferred.reason], [true, false, true, 'session_running'], 'switch while running')
  const run = await consume(client, started.run_id)
  eq(run.last.output, 'model=switched-model ', 'the running turn keeps its model')
  await waitFor(async () => (await client.status(s, PROFILE)).config?.model === 'deferred-model', 5000, 'the deferred switch to apply')
})

flow('session_title', async () => {
  const s = sid('title')
  const run = await runChat(client, s, 'plan a trip to lisbon')
  expectComplete(run, 'echo: plan a trip to lisbon', 'title: chat')
  // rc/handle-bridge-run.ts polls every 500 ms, 2000 ms timeout
  const title = await waitFor(async () => {
    const r = await client.getSessionTitle(s, PROFILE, { timeoutMs: 2000 })
    return r.title ? r : null
  }, 10000, 'a session title')
  eq(title.session_id, s, 'title session_id')
  ok(title.title.startsWith('Title: plan a trip'), 'generated title', title)
  const result = await client.getResult(run.started.run_id)
  const ev = named(result.events, 'session.title.updated')
  ok(ev.length === 1 && ev[0].title === title.title, 'session.title.updated event', result.events.map(e => e.event))
  const none = await client.getSessionTitle(sid('title-none'), PROFILE, { timeoutMs: 2000 })
  eq(none.title, '', 'no title for an unknown session')
})

flow('clarify', async () => {
  const s = sid('clarify')
  const asked = []
  const run = await runChat(client, s, 'script:clarify Which colour?|red,blue;say thanks', {
    onEvent: async (ev) => {
      if (ev.event !== 'clarify.requested') return
      asked.push({ ev, reply: await client.clarifyRespond(String(ev.clarify_id), 'blue') })
    },
  })
  eq(asked.length, 1, 'one clarify.requested')
  const { ev, reply } = asked[0]
  eq([ev.question, ev.choices], ['Which colour?', ['red', 'blue']], 'clarify question and choices')
  ok(typeof ev.clarify_id === 'string' && ev.clarify_id && typeof ev.timeout_ms === 'number', 'clarify_id, timeout_ms', ev)
  eq([reply.clarify_id, reply.resolved], [ev.clarify_id, true], 'clarify_respond answer')
  expectComplete(run, 'clarified=blue thanks', 'clarify')
})

flow('mcp_list', async () => {
  const list = await client.mcpList(PROFILE)
  ok(list.ok === true && Array.isArray(list.servers), 'mcp_list answers servers', list)
  const srv = list.servers.find(x => x.name === 'fakesrv')
  ok(srv, 'the configured server is listed', list)
  eq(srv.transport, 'stdio', 'transport')
  ok(typeof list.total_tools === 'number', 'total_tools', list)
  const tools = await client.mcpTools(undefined, PROFILE)
  ok(tools.ok === true && Array.isArray(tools.results), 'mcp_tools_list', tools)
})

flow('reload_skills', async () => {
  // rc/session-command.ts reloadSkillsThroughBridge, verbatim logic
  const s = sid('skills')
  let result
  try {
    result = await client.reloadSkills(PROFILE)
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    if (!message.includes('unknown action: skills_reload')) throw err
    result = await client.command(s, 'reload-skills', PROFILE)
    ok(result.handled && result.action === 'reload-skills', 'fallback command reload-skills', result)
  }
  ok(Array.isArray(result.added) && Array.isArray(result.removed), 'added/removed', result)
  ok(typeof result.total === 'number' && result.total >= 1, 'total', result)
  ok([...result.added.map(a => a.name), ...(result.unchanged || [])].includes('demo-skill'), 'the demo skill is known', result)
  const skill = await client.command(s, '/demo-skill do it', PROFILE)
  eq([skill.handled, skill.type], [true, 'skill'], '/<skill> command')
})

flow('profiles', async () => {
  // a named profile (HERMES_HOME/profiles/work, its own config.yaml and state.db)
  const work = sid('prof-work')
  const dflt = sid('prof-default')
  expectComplete(await runChat(client, dflt, 'script:model'), 'model=fake-model ', 'default profile model')
  const run = await runChat(client, work, 'script:model', { profile: 'work' })
  expectComplete(run, 'model=work-model ', "the work profile's config.yaml model")
  eq(run.events[0].profile, 'work', 'bridge.context.ready profile')
  const st = await client.statusIfLoaded(work, 'work', { timeoutMs: 1000 })
  eq([st.exists, st.config?.profile], [true, 'work'], 'status_if_loaded in the work profile')
  const title = await waitFor(async () => (await client.getSessionTitle(work, 'work', { timeoutMs: 2000 })).title, 10000, 'the work session title')
  ok(String(title).startsWith('Title: '), 'title from the work profile state.db', title)
  const quick = new AgentBridgeClient({ timeoutMs: 5000, connectRetryMs: 0 })
  const reply = await quick.destroyProfile('work')
  eq([reply.profile, reply.destroyed], ['work', 1], 'destroy_profile work')
  const gone = await client.statusIfLoaded(work, 'work', { timeoutMs: 1000 })
  ok(gone.exists !== true, 'the work session is gone', gone)
  const kept = await client.statusIfLoaded(dflt, PROFILE, { timeoutMs: 1000 })
  eq(kept.exists, true, 'the default-profile session survives')
})

flow('destroy_profile', async () => {
  const a = sid('dp')
  expectComplete(await runChat(client, a, 'one'), 'echo: one', 'destroy_profile: chat')
  // controllers/hermes/profiles.ts: own client, 5000 ms, no connect retry
  const quick = new AgentBridgeClient({ timeoutMs: 5000, connectRetryMs: 0 })
  const reply = await quick.destroyProfile(PROFILE)
  eq(reply.profile, PROFILE, 'destroy_profile profile')
  ok(typeof reply.destroyed === 'number' && reply.destroyed >= 1, 'destroyed count', reply)
  const st = await client.statusIfLoaded(a, PROFILE, { timeoutMs: 1000 })
  eq(st.running, false, 'not running after destroy_profile')
  ok(st.exists !== true, 'session gone after destroy_profile', st)
  expectComplete(await runChat(client, a, 'two'), 'echo: two', 'chat after destroy_profile')
})

flow('destroy_all', async () => {
  const ids = [sid('da0'), sid('da1')]
  for (const s of ids) expectComplete(await runChat(client, s, 'x'), 'echo: x', 'destroy_all: chat')
  const running = await client.chat(sid('da-run'), 'script:sleep 3000;say late', undefined, undefined, PROFILE)
  await sleep(100)
  const reply = await client.destroyAll()
  ok(typeof reply.destroyed === 'number' && reply.destroyed >= 3, 'destroyed count', reply)
  for (const s of ids) {
    const st = await client.statusIfLoaded(s, PROFILE, { timeoutMs: 1000 })
    ok(st.exists !== true && st.running === false, 'session gone after destroy_all', st)
  }
  const end = await waitFor(async () => {
    const out = await client.getOutput(running.run_id, 0, 0)
    return out.done ? out : null
  }, 8000, 'the running run to end after destroy_all')
  ok(!end.output.includes('late'), 'the running run was stopped', end)
  expectComplete(await runChat(client, ids[0], 'fresh'), 'echo: fresh', 'chat after destroy_all')
})

// A turn live when its daemon died goes on under the next one: its worker
// outlived the old daemon and the new one attached to it (FRAMES.md,
// re-attaching). It ends complete, every delta once.
async function expectRunWentOn(runId, total, what) {
  await waitFor(async () => (await client.getOutput(runId, 0, 0)).done, 30000, `${what} to end`)
  const result = await client.getResult(runId)
  eq(result.status, 'complete', `${what}, after recovery`)
  eq(result.output, Array.from({ length: total }, (_, i) => `d${i} `).join(''), `${what}: every delta once`)
}

flow('hung_recovery', async () => {
  // manager.ensureReady: an unreachable managed child is SIGTERMed/SIGKILLed and restarted
  const pid = manager.getRuntimeState().pid
  const s = sid('hung')
  const started = await client.chat(s, 'script:stream 400 25', undefined, undefined, PROFILE)
  await waitFor(async () => (await client.getOutput(started.run_id, 0, 0)).cursor >= 3, 5000, 'output before the hang')
  process.kill(pid, 'SIGSTOP')
  let readiness
  try {
    // a group stop can lag while one thread sits in the kernel (an fsync of
    // the event log): wait until the process is really stopped
    const procState = () => readFileSync(`/proc/${pid}/stat`, 'utf-8').replace(/^.*\) /s, '').split(' ')[0]
    await waitFor(() => procState() === 'T', 10000, 'the daemon to be stopped (state T)')
    readiness = await manager.ensureReady({})
  } finally {
    if (alive(pid)) { try { process.kill(pid, 'SIGCONT') } catch {} }
  }
  eq(readiness.status, 'ready', 'ensureReady recovered the bridge')
  const newPid = recordPid(manager)
  ok(newPid && newPid !== pid, 'a new daemon was spawned', manager.getRuntimeState())
  await expectRunWentOn(started.run_id, 400, "the hung daemon's run")
  expectComplete(await runChat(client, s, 'recovered'), 'echo: recovered', 'chat after recovery')
}, 45000)

flow('crash_recovery', async () => {
  const pid = manager.getRuntimeState().pid
  ok(pid && alive(pid), 'the managed daemon is alive', manager.getRuntimeState())
  const s = sid('crash')
  const started = await client.chat(s, 'script:stream 400 25', undefined, undefined, PROFILE)
  await waitFor(async () => (await client.getOutput(started.run_id, 0, 0)).cursor >= 5, 5000, 'output before the crash')
  process.kill(pid, 'SIGKILL')
  await waitFor(() => !alive(pid) || readFileSync(`/proc/${pid}/stat`, 'utf-8').replace(/^.*\) /s, '').split(' ')[0] === 'Z', 5000, 'the daemon to die')
  // the manager's exit handler schedules a restart (1000 ms)
  let how = 'auto-restart'
  try {
    await waitFor(() => {
      const st = manager.getRuntimeState()
      return st.running && st.pid && st.pid !== pid
    }, 12000, "the manager's automatic restart")
  } catch (err) {
    how = 'manager.start()'
    log(`auto-restart did not happen: ${err.message}; state ${JSON.stringify(manager.getRuntimeState())}`)
    await manager.start()
  }
  const newPid = recordPid(manager)
  ok(newPid && newPid !== pid && alive(newPid), `a new daemon runs (${how})`, manager.getRuntimeState())
  const readiness = await manager.ensureReady({ timeoutMs: 5000 })
  eq(readiness.status, 'ready', 'ensureReady')
  await expectRunWentOn(started.run_id, 400, 'the run live at the crash')
  const st = await client.statusIfLoaded(s, PROFILE, { timeoutMs: 1000 })
  eq(st.running, false, 'the old session is not running once its run ended')
  expectComplete(await runChat(client, s, 'after crash'), 'echo: after crash', 'chat after the restart')
  expectComplete(await runChat(client, sid('crash-new'), 'new session'), 'echo: new session', 'new session after the restart')
  if (how !== 'auto-restart') throw new Check("the daemon came back only through manager.start(), not the manager's auto-restart")
}, 45000)

flow('stop', async () => {
  const pid = manager.getRuntimeState().pid
  await manager.stop()
  const st = manager.getRuntimeState()
  ok(!st.running && !st.ready, 'manager stopped', st)
  await waitFor(() => !alive(pid), 12000, 'the daemon to exit on SIGTERM')
  const sock = process.env.HERMES_AGENT_BRIDGE_ENDPOINT.replace(/^ipc:\/\//, '')
  ok(!existsSync(sock), 'the socket file is removed')
  const readiness = await manager.checkReadiness({ timeoutMs: 500 })
  eq(readiness.reachable, false, 'unreachable after stop')
}, 20000)

// ---------------------------------------------------------------- main

const always = new Set(['start', 'stop'])
let failures = 0
let startFailed = false
for (const f of flows) {
  if (ONLY.length && !always.has(f.name) && !ONLY.includes(f.name)) continue
  if (startFailed && f.name !== 'stop') { console.log(`FAIL ${f.name}: not run (the daemon did not start)`); failures++; continue }
  const t0 = Date.now()
  log(`flow ${f.name} begins`)
  try {
    let timer
    await Promise.race([
      f.fn(),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Check(`timed out after ${f.timeoutMs} ms`)), f.timeoutMs) }),
    ]).finally(() => clearTimeout(timer))
    console.log(`PASS ${f.name} (${Date.now() - t0} ms)`)
  } catch (err) {
    failures++
    const msg = err instanceof Check ? err.message : `${err?.name || 'Error'}: ${err?.message}${err?.response ? ' response=' + JSON.stringify(err.response).slice(0, 800) : ''}`
    console.log(`FAIL ${f.name}: ${msg}`)
    log(`flow ${f.name} failed: ${msg}`)
    if (f.name === 'start') startFailed = true
  }
}
// never leave a daemon behind
for (const pid of recordedPids) {
  if (alive(pid)) { try { process.kill(pid, 'SIGKILL') } catch {} }
}
console.log(failures ? `${failures} flow(s) failed` : 'all flows passed')
process.exit(failures ? 1 : 0)
