// kairos for opencode: written by `kairos integrate opencode`; `kairos integrate opencode --uninstall`
// removes it. It runs the commands below with the session's facts as JSON on stdin, as the other agent
// CLIs' hooks do (see `kairos hook --help`):
//
//   first message of a session   hook opencode SessionStart   the project's board, for the system prompt
//   a message the person typed   hook opencode UserPromptSubmit   marks the session active
//   end of an answer's text      hook opencode Stop           a due prompt, sent into the running turn
//   session idle (TUI)           hook opencode wait           waits; a due prompt starts a turn
//   exit, or session deleted     hook opencode SessionEnd     deregisters; hands over for consolidation
//
// Nothing here may break opencode: every failure (kairos missing, kairosd down, a bad answer) is
// swallowed, and a call that hangs is killed after CALL_TIMEOUT_MS. No npm dependencies.

import { spawn } from "node:child_process"
import { homedir } from "node:os"
import { isAbsolute, join } from "node:path"

const KAIROS = __KAIROS__
const KAIROS_HOME = __KAIROS_HOME__
const CALL_TIMEOUT_MS = 10000
const END_TIMEOUT_MS = 3000
const WAIT_SECONDS = 86340 // one waiter covers an idle day; every idle re-arms it
const MAX_OUTPUT = 4 << 20
// `opencode run`: the run ends right after its session goes idle, so nothing waits for a wake-up.
const HEADLESS = process.argv.slice(2).find((a) => !a.startsWith("-")) === "run"

function databasePath() {
  const override = process.env.OPENCODE_DB
  if (override) return isAbsolute(override) ? override : null
  const data = process.env.XDG_DATA_HOME || join(homedir(), ".local", "share")
  return join(data, "opencode", "opencode.db")
}

// Runs `kairos <command...>` with `payload` on stdin: {code, stdout, stderr}, or null when it could not run.
function run(command, payload, timeoutMs, onChild) {
  return new Promise((resolve) => {
    let child
    try {
      const env = { ...process.env }
      if (KAIROS_HOME) env.KAIROS_HOME = KAIROS_HOME
      child = spawn(KAIROS, command.split(" "), { env, stdio: ["pipe", "pipe", "pipe"] })
    } catch {
      resolve(null)
      return
    }
    const out = []
    const err = []
    let size = 0
    const keep = (into) => (chunk) => {
      size += chunk.length
      if (size <= MAX_OUTPUT) into.push(chunk)
    }
    const timer = timeoutMs ? setTimeout(() => child.kill("SIGKILL"), timeoutMs) : null
    child.stdout.on("data", keep(out))
    child.stderr.on("data", keep(err))
    child.on("error", () => {
      if (timer) clearTimeout(timer)
      resolve(null)
    })
    child.on("close", (code) => {
      if (timer) clearTimeout(timer)
      resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") })
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
    if (onChild) onChild(child)
  })
}

function answer(result) {
  if (!result || result.code !== 0 || !result.stdout.trim()) return {}
  try {
    const parsed = JSON.parse(result.stdout)
    return parsed && typeof parsed === "object" ? parsed : {}
  } catch {
    return {}
  }
}

function textPart(text) {
  return { parts: [{ type: "text", text }] }
}

export const KairosPlugin = async ({ client, directory }) => {
  const transcript = databasePath()
  const sessions = new Map() // id -> {started, board, first, continued, sending, waiter, ended}
  const children = new Set() // sub-agent sessions (task tool): not sessions a person works in

  const facts = (id, extra) => ({
    session_id: id,
    cwd: directory,
    ...(transcript ? { transcript_path: transcript } : {}),
    ...extra,
  })

  async function isChild(id) {
    if (children.has(id)) return true
    try {
      const found = await client.session.get({ path: { id } })
      if (found && found.data && found.data.parentID) children.add(id)
    } catch {}
    return children.has(id)
  }

  // Registers the session once (the TUI's first message, or a resumed session's) and fetches its board.
  function start(id) {
    let session = sessions.get(id)
    if (!session) {
      session = { board: null, first: null, continued: false, sending: 0, waiter: null, ended: false }
      sessions.set(id, session)
      session.started = (async () => {
        if (await isChild(id)) {
          sessions.delete(id)
          return null
        }
        const got = answer(await run("hook opencode SessionStart", facts(id, { source: "startup" }), CALL_TIMEOUT_MS))
        if (typeof got.context === "string" && got.context) session.board = got.context
        if (typeof got.text === "string" && got.text) session.first = got.text
        return session
      })().catch(() => session)
    }
    return session.started
  }

  function stopWaiting(session) {
    if (session && session.waiter) {
      try {
        session.waiter.kill("SIGTERM")
      } catch {}
      session.waiter = null
    }
  }

  async function wait(id) {
    const session = sessions.get(id)
    if (HEADLESS || !session || session.ended || session.waiter) return
    let mine = null
    const result = await run(`hook opencode wait --max-wait ${WAIT_SECONDS}`, facts(id), 0, (child) => {
      mine = session.waiter = child
    })
    if (session.waiter === mine) session.waiter = null
    if (!result || result.code !== 2 || session.ended) return
    const text = result.stderr.trim()
    if (!text) return
    try {
      await client.session.promptAsync({ path: { id }, body: textPart(text) })
    } catch {}
  }

  async function end(id, reason) {
    const session = sessions.get(id)
    if (!session || session.ended) return
    session.ended = true
    stopWaiting(session)
    await run("hook opencode SessionEnd", facts(id, { reason }), END_TIMEOUT_MS)
  }

  return {
    "chat.message": async (input) => {
      try {
        const id = input.sessionID
        const session = await start(id)
        if (!session) return
        stopWaiting(session)
        if (session.sending > 0) return // the prompt this plugin is sending, not one the person typed
        session.continued = false
        await run("hook opencode UserPromptSubmit", facts(id), CALL_TIMEOUT_MS)
      } catch {}
    },

    "experimental.chat.system.transform": async (input, output) => {
      try {
        if (!input.sessionID) return
        const session = await start(input.sessionID)
        if (!session) return
        if (session.board) output.system.push(session.board)
        // Prompts that were due when the session started: part of its first turn, not of every request.
        if (session.first) output.system.push(session.first)
      } catch {}
    },

    "experimental.text.complete": async (input) => {
      try {
        const id = input.sessionID
        const session = sessions.get(id)
        if (!session || session.ended || children.has(id)) return
        session.first = null
        const got = answer(
          await run("hook opencode Stop", facts(id, { stop_hook_active: session.continued }), CALL_TIMEOUT_MS),
        )
        if (typeof got.text !== "string" || !got.text) return
        session.continued = true
        session.sending += 1
        try {
          // Joins the running turn: opencode answers it before the session goes idle, headless too.
          await client.session.prompt({ path: { id }, body: { ...textPart(got.text), noReply: true } })
        } finally {
          session.sending -= 1
        }
      } catch {}
    },

    event: async ({ event }) => {
      try {
        const props = (event && event.properties) || {}
        if (event.type === "session.created" && props.info && props.info.parentID) {
          children.add(props.info.id)
        } else if (event.type === "session.idle") {
          const session = sessions.get(props.sessionID)
          if (session) {
            session.continued = false
            session.first = null
            wait(props.sessionID)
          }
        } else if (event.type === "session.status" && props.status && props.status.type === "busy") {
          stopWaiting(sessions.get(props.sessionID))
        } else if (event.type === "session.deleted") {
          const id = (props.info && props.info.id) || props.sessionID
          if (id) await end(id, "deleted")
        }
      } catch {}
    },

    dispose: async () => {
      try {
        await Promise.all([...sessions.keys()].map((id) => end(id, "exit")))
      } catch {}
    },
  }
}
