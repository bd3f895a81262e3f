// Drives OpenClaw's published gateway client (@openclaw/gateway-client) against a gateway and prints what it saw
// as one JSON object on stdout. Run with Node >= 22.19 (this package's `node`): node drive.mjs <url> <token>.
// It checks nothing itself: apps/interop asserts on its output and validates it with OpenClaw's schemas.
import {
  createSessionProjection,
  GatewayClient,
  readSessionMessageSequence,
  reduceSessionProjectionRunEvent,
} from "@openclaw/gateway-client";
import { readConnectErrorDetailCode } from "@openclaw/gateway-protocol/connect-error-details";

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  process.stderr.write("usage: node drive.mjs <ws-url> <token>\n");
  process.exit(2);
}

// A backstop against a hang, not a budget: each wait below has its own far bound (WAIT_MS) and names what was
// missing; apps/interop's execFile limit (openclaw-reference.ts) is above this one.
const deadline = setTimeout(() => {
  process.stderr.write("drive.mjs: gave up after 240 s\n");
  process.exit(3);
}, 240_000);

/** How long any one wait may take before it fails: far above the normal time, even on a loaded machine. */
const WAIT_MS = 60_000;

const describeError = (error) => ({
  name: error.name,
  code: error.gatewayCode ?? error.code,
  message: error.message,
  details: error.details,
  retryable: error.retryable,
  detailCode: readConnectErrorDetailCode(error.details),
});

/** A client with our identity; `seen` records its hello, connect error and reconnect pause as they come. */
function start(withToken, events) {
  const seen = {};
  const client = new GatewayClient({
    url,
    token: withToken,
    clientName: "gateway-client",
    mode: "backend",
    role: "operator",
    scopes: ["operator.read", "operator.write", "operator.admin"],
    // Above agent.wait's own timeoutMs below, so the server answers first (the client's default is 30 s).
    requestTimeoutMs: WAIT_MS + 30_000,
    // The test's gateway ticks every second (a real one every 30 s). OpenClaw's client drops the link after two
    // missed ticks; on a loaded machine a stall can be longer, and a reconnect would lose the events recorded here.
    tickWatchTimeoutMs: WAIT_MS,
    onEvent: (frame) => events?.push(frame),
    onHelloOk: (hello) => {
      seen.hello = hello;
    },
    onConnectError: (error) => {
      seen.error = describeError(error);
    },
    onReconnectPaused: (info) => {
      seen.paused = info;
    },
  });
  client.start();
  return { client, seen };
}

/** Resolves once `condition()` holds; fails the script (exit 1) naming `what` (text, or a function) after WAIT_MS. */
async function until(condition, what) {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > WAIT_MS) {
      throw new Error(`drive.mjs: no ${typeof what === "function" ? what() : what} after ${WAIT_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A request's payload, or the error it failed with (as the client reports it). */
async function call(client, method, params) {
  try {
    return { ok: true, payload: await client.request(method, params) };
  } catch (error) {
    return {
      ok: false,
      error: { code: error.gatewayCode ?? error.code, message: error.message, details: error.details },
    };
  }
}

const out = {};

// A wrong token: the client must report the refusal and stop reconnecting.
{
  const { client, seen } = start(`${token}-wrong`);
  await until(
    () => seen.hello !== undefined || seen.paused !== undefined,
    "hello or reconnect pause (wrong token)",
  );
  out.wrongToken = { error: seen.error ?? null, paused: seen.paused ?? null, hello: seen.hello ?? null };
  client.stop();
}

const events = [];
const { client, seen } = start(token, events);
await until(() => seen.hello !== undefined || seen.error !== undefined, "hello or connect error");
if (seen.hello === undefined) {
  process.stdout.write(`${JSON.stringify({ ...out, connectError: seen.error ?? null })}\n`);
  process.exit(1);
}
out.hello = seen.hello;

const results = {};
results.listBefore = await call(client, "sessions.list", {});
results.chatSend = await call(client, "chat.send", {
  sessionKey: "main",
  message: "hello from openclaw",
  idempotencyKey: "oc-send-1",
});
results.chatSendAgain = await call(client, "chat.send", {
  sessionKey: "main",
  message: "hello from openclaw",
  idempotencyKey: "oc-send-1",
});
results.chatWait = await call(client, "agent.wait", { runId: "oc-send-1", timeoutMs: WAIT_MS });
results.agent = await call(client, "agent", {
  message: "work, please",
  idempotencyKey: "oc-agent-1",
  sessionKey: "main",
});
const agentRunId = results.agent.payload?.runId;
results.agentWait = await call(client, "agent.wait", { runId: agentRunId, timeoutMs: WAIT_MS });
results.history = await call(client, "chat.history", { sessionKey: "main" });
results.historyUnknown = await call(client, "chat.history", { sessionKey: "no-such-session" });
results.list = await call(client, "sessions.list", {});
results.patch = await call(client, "sessions.patch", { key: "main", label: "from openclaw" });
results.resolve = await call(client, "sessions.resolve", { label: "from openclaw" });
results.agentsList = await call(client, "agents.list", {});
results.spawnedBy = await call(client, "agent", {
  message: "child",
  idempotencyKey: "oc-agent-2",
  sessionKey: "agent:main:child",
  spawnedBy: "agent:main:main",
});
out.results = results;

// Wait for a tick (the test's gateway ticks often) and the final events of the three runs started above.
const finals = () => events.filter((e) => e.event === "chat" && e.payload?.state === "final").length;
await until(
  () => finals() >= 3 && events.some((e) => e.event === "tick"),
  () => `tick and 3 final chat events (saw ${finals()} finals)`,
);
out.events = events;

// OpenClaw's own readers over what our gateway sent: run projections and message sequences.
out.projections = events
  .filter((e) => e.event === "chat" && e.payload?.state === "final")
  .map((e) => {
    const transition = reduceSessionProjectionRunEvent(
      createSessionProjection({ sessionKey: e.payload.sessionKey }),
      e.payload,
    );
    return { runId: e.payload.runId, run: transition?.currentRun ?? null };
  });
out.historySequences = (results.history.payload?.messages ?? []).map((m) => readSessionMessageSequence(m));

await client.stopAndWait({ timeoutMs: WAIT_MS });
clearTimeout(deadline);
process.stdout.write(`${JSON.stringify(out)}\n`);
