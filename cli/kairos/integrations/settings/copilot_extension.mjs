// kairos for Copilot CLI: idle wake. Written by `kairos integrate copilot --idle-wake`; `kairos integrate
// copilot --no-idle-wake` (or --uninstall) removes it. Copilot CLI starts it as an extension (experimental
// mode) beside each session. Whenever an interactive session goes idle, it runs
//
//   kairos hook copilot wait --max-wait SECONDS     (the session's facts as JSON on stdin)
//
// which waits until kairosd has a prompt due for this session, prints it on stderr and exits 2; the
// extension then sends it into the session, which starts a turn as if the user had typed it. A prompt
// the user types, or the session's end, stops the waiter. The board, turn-end delivery and session end
// stay with kairos' hooks (~/.copilot/hooks/kairos.json).
//
// Nothing here may break Copilot: every failure (kairos missing, kairosd down, a bad answer) is swallowed.
// It never writes to stdout (Copilot's JSON-RPC channel). No npm dependencies beyond Copilot's own SDK.

import { spawn } from "node:child_process"
import { joinSession } from "@github/copilot-sdk/extension"

const KAIROS = __KAIROS__
const KAIROS_HOME = __KAIROS_HOME__
const WAIT_SECONDS = 86340 // one waiter covers an idle day; every idle re-arms it
const MAX_OUTPUT = 4 << 20

let waiter = null // the running `kairos hook copilot wait`
let ended = false
const cwd = process.cwd() // the session's folder: Copilot starts extensions there

// Runs `kairos <args>` with `payload` on stdin: {code, stderr}, or null when it could not run.
function run(args, payload, onChild) {
  return new Promise((resolve) => {
    let child
    try {
      const env = { ...process.env }
      if (KAIROS_HOME) env.KAIROS_HOME = KAIROS_HOME
      child = spawn(KAIROS, args, { env, stdio: ["pipe", "ignore", "pipe"] })
    } catch {
      resolve(null)
      return
    }
    const err = []
    let size = 0
    child.stderr.on("data", (chunk) => {
      size += chunk.length
      if (size <= MAX_OUTPUT) err.push(chunk)
    })
    child.on("error", () => resolve(null))
    child.on("close", (code) => resolve({ code, stderr: Buffer.concat(err).toString("utf8") }))
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
    if (onChild) onChild(child)
  })
}

function stopWaiting() {
  if (waiter) {
    try {
      waiter.kill("SIGTERM")
    } catch {}
    waiter = null
  }
}

async function wait(session) {
  if (ended || waiter) return
  let mine = null
  const facts = { session_id: session.sessionId, cwd }
  const result = await run(["hook", "copilot", "wait", "--max-wait", String(WAIT_SECONDS)], facts, (child) => {
    mine = waiter = child
  })
  if (waiter === mine) waiter = null
  if (!result || result.code !== 2 || ended) return
  const text = result.stderr.trim()
  if (!text) return
  try {
    await session.send({ prompt: text })
  } catch {}
}

try {
  // No hooks and no tools: kairos' hooks are in ~/.copilot/hooks/kairos.json, and an extension that
  // registers neither needs no permission of its own.
  const session = await joinSession({})
  session.on("session.idle", (event) => {
    // `copilot -p` ends after its turn: nobody is there to wake, and a waiter would only hold it up.
    const mode = event && event.data && event.data.mode
    if (mode === undefined || mode === "interactive") wait(session).catch(() => {})
  })
  session.on("user.message", () => stopWaiting())
  session.on("session.shutdown", () => {
    ended = true
    stopWaiting()
  })
  process.on("exit", stopWaiting)
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
    process.on(signal, () => {
      ended = true
      stopWaiting()
      process.exit(0)
    })
  }
} catch {}
