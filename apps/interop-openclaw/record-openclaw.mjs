// Records what a real OpenClaw gateway keeps and answers, as the fixtures of the OpenClaw import and interop tests
// (packages/testing/fixtures/openclaw/<version>/). Run by hand, never by the tests or CI: it needs OpenClaw itself,
// which is not a dependency of this repository.
//
//   mkdir -p /tmp/oc/new && cd /tmp/oc/new && npm i node@24 && PATH=$PWD/node_modules/node/bin:$PATH npm i openclaw@2026.9.6
//   mkdir -p /tmp/oc/old && cd /tmp/oc/old && npm pkg set overrides.libsignal=npm:libsignal@6.0.0 \
//     && npm i openclaw@2026.1.30 node@22.23.3      # libsignal: a git dependency of WhatsApp's library, unused here
//   /tmp/oc/new/node_modules/node/bin/node apps/interop-openclaw/record-openclaw.mjs /tmp/oc/new \
//     packages/testing/fixtures/openclaw/2026.9.6
//   /tmp/oc/old/node_modules/node/bin/node apps/interop-openclaw/record-openclaw.mjs /tmp/oc/old \
//     packages/testing/fixtures/openclaw/2026.1.30
//
// Run it with the Node the OpenClaw version needs (2026.9.x: >= 24.16; early 2026: >= 22.12). It starts a fake model
// server (fake-model.mjs) and the OpenClaw gateway on loopback with a fresh state directory, plays one scenario through
// `openclaw gateway call` (a main session with a tool call and a spawned sub-agent, a labelled session, a group-style
// key with a route, model/thinking/send-policy overrides through sessions.patch), records the answers, stops the
// gateway and copies the session state, sanitised: temp paths become ~/.openclaw, bulky prompt snapshots and
// unrelated tables are emptied. Output: <out>/state/ (the state directory as OpenClaw left it, sessions part only)
// and <out>/answers.json (the wire payloads: sessions.list, chat.history per session, acks, patches; with 2026.9.x
// also hello-ok and events, seen by OpenClaw's published client).
import { execFile, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { startFakeModel } from "./fake-model.mjs";

const [installDir, outArg] = process.argv.slice(2);
if (!installDir || !outArg) {
  process.stderr.write("usage: node record-openclaw.mjs <dir with node_modules/openclaw> <fixture dir>\n");
  process.exit(2);
}
const openclawDir = resolve(installDir, "node_modules/openclaw");
const openclawBin = join(openclawDir, "openclaw.mjs");
const version = JSON.parse(readFileSync(join(openclawDir, "package.json"), "utf8")).version;
const out = resolve(outArg);
const TOKEN = "fixture-token-0000000000";
const modern = Number(version.split(".")[1]) >= 9 || Number(version.split(".")[0]) > 2026;

const freePort = () =>
  new Promise((done) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

const work = mkdtempSync(join(tmpdir(), "openclaw-record-"));
const stateDir = join(work, "state");
const home = join(work, "home");
mkdirSync(stateDir, { recursive: true });
mkdirSync(home, { recursive: true });
const model = await startFakeModel({ log: join(work, "model.log") });
const port = await freePort();
const url = `ws://127.0.0.1:${port}`;
const fakeModel = (id, reasoning) => ({
  id,
  name: id,
  reasoning,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 32000,
  maxTokens: 1024,
});
writeFileSync(
  join(stateDir, "openclaw.json"),
  JSON.stringify(
    {
      gateway: { mode: "local", port, bind: "loopback", auth: { mode: "token", token: TOKEN } },
      agents: {
        defaults: {
          model: { primary: "fake/fake-1" },
          models: { "fake/fake-1": { alias: "Fake" }, "fake/fake-2": { alias: "Fake2" } },
        },
      },
      models: {
        mode: "replace",
        providers: {
          fake: {
            baseUrl: model.url,
            apiKey: "fake-local",
            api: "openai-completions",
            models: [fakeModel("fake-1", false), fakeModel("fake-2", true)],
          },
        },
      },
    },
    null,
    2,
  ),
);
const env = { ...process.env, OPENCLAW_STATE_DIR: stateDir, HOME: home, OPENCLAW_GATEWAY_TOKEN: TOKEN };
for (const name of Object.keys(env))
  if (/API_KEY|_TOKEN$/.test(name) && name !== "OPENCLAW_GATEWAY_TOKEN") delete env[name];

const gateway = spawn(process.execPath, [openclawBin, "gateway", "run", "--port", String(port)], {
  env,
  stdio: ["ignore", "pipe", "pipe"],
});
let gatewayLog = "";
gateway.stdout.on("data", (d) => {
  gatewayLog += d;
});
gateway.stderr.on("data", (d) => {
  gatewayLog += d;
});
gateway.once("exit", (code) => {
  gatewayLog += `\n[gateway exited ${code}]\n`;
});

/** One `openclaw gateway call`: its payload, or the error it printed. */
function call(method, params = {}) {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [
        openclawBin,
        "gateway",
        "call",
        method,
        "--params",
        JSON.stringify(params),
        "--json",
        "--url",
        url,
        "--token",
        TOKEN,
        "--timeout",
        "90000",
      ],
      { env, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const text = stdout.slice(stdout.indexOf("{"));
        if (!error) {
          try {
            done({ ok: true, payload: JSON.parse(text) });
            return;
          } catch {}
        }
        done({ ok: false, error: `${stderr}${stdout}`.trim().slice(0, 2000) });
      },
    );
  });
}

async function until(what, check, ms = 120_000) {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value;
    if (gateway.exitCode !== null)
      throw new Error(`record-openclaw: the gateway exited\n${gatewayLog.slice(-4000)}`);
    if (Date.now() - started > ms)
      throw new Error(`record-openclaw: no ${what} after ${ms} ms\n${gatewayLog.slice(-4000)}`);
    await sleep(500);
  }
}

const answers = {
  openclaw: version,
  recordedWith: "apps/interop-openclaw/record-openclaw.mjs",
  results: {},
  history: {},
};
const results = answers.results;
let client;
const events = [];
try {
  await until("gateway", async () => (await call("health")).ok);
  results.health = await call("health");
  if (modern) {
    // OpenClaw's published client sees the hello and every event of the scenario.
    const { GatewayClient } = await import("@openclaw/gateway-client");
    let hello;
    client = new GatewayClient({
      url,
      token: TOKEN,
      clientName: "gateway-client",
      mode: "backend",
      role: "operator",
      scopes: ["operator.read", "operator.write", "operator.admin"],
      onEvent: (frame) => events.push(frame),
      onHelloOk: (h) => {
        hello = h;
      },
    });
    client.start();
    await until("hello-ok", () => hello);
    answers.hello = hello;
  }
  results.listEmpty = await call("sessions.list", {});

  const send = async (name, sessionKey, message, extra = {}) => {
    results[name] = await call("chat.send", {
      sessionKey,
      message,
      idempotencyKey: `fixture-${name}`,
      ...extra,
    });
    if (!results[name].ok) return;
    results[`${name}Wait`] = await call("agent.wait", {
      runId: results[name].payload.runId,
      timeoutMs: 60_000,
    });
  };
  await send("sendHello", "main", "hello there");
  await send("sendTool", "main", "look around");
  await send("sendSpawn", "main", "spawn: summarise the release notes");
  // The child runs, then announces to main: wait until the child has a transcript and main its announce.
  await until("sub-agent", async () => {
    const list = await call("sessions.list", {});
    const child = list.payload?.sessions?.find((s) => s.key.includes(":subagent:"));
    if (!child) return false;
    const history = await call("chat.history", { sessionKey: child.key });
    return (history.payload?.messages?.length ?? 0) >= 2;
  });
  await sleep(8000);

  await send("sendOps", "agent:main:ops", "status of the deploy?");
  results.patchOps = await call("sessions.patch", { key: "agent:main:ops", label: "ops desk" });
  // A group-style key, with the route a channel message would leave (OpenClaw 2026.9 takes it on chat.send).
  const group = "agent:main:discord:group:987654321";
  await send(
    "sendGroup",
    group,
    "hi from the team room",
    modern
      ? { originatingChannel: "discord", originatingTo: "channel:987654321", originatingAccountId: "default" }
      : {},
  );
  if (!results.sendGroup.ok) await send("sendGroup", group, "hi from the team room");
  results.patchGroup = await call("sessions.patch", { key: group, sendPolicy: "deny" });
  results.patchModel = await call("sessions.patch", { key: "main", model: "fake/fake-2" });
  results.patchThinking = await call("sessions.patch", { key: "main", thinkingLevel: "high" });
  if (!results.patchThinking.ok)
    results.patchThinking = await call("sessions.patch", { key: "main", thinkingLevel: "low" });
  results.patchLabel = await call("sessions.patch", { key: "main", label: "home" });
  await send("sendAfterPatch", "main", "one more thing");
  results.resolve = await call("sessions.resolve", { label: "home" });
  results.agentsList = await call("agents.list", {});
  results.list = await call("sessions.list", {});
  for (const row of results.list.payload?.sessions ?? []) {
    answers.history[row.key] = await call("chat.history", { sessionKey: row.key });
  }
  results.historyUnknown = await call("chat.history", { sessionKey: "no-such-session" });
  await sleep(1500);
  answers.events = events;
} finally {
  if (client) await client.stopAndWait({ timeoutMs: 5000 }).catch(() => undefined);
  gateway.kill("SIGTERM");
  await Promise.race([new Promise((done) => gateway.once("exit", done)), sleep(30_000)]);
  if (gateway.exitCode === null) gateway.kill("SIGKILL");
  await model.close();
}

// ---------------------------------------------------------------- sanitise and keep
/** Temp paths become `~/.openclaw` (the state) or `~`, OpenClaw's install `<openclaw>`; longest first. */
const replacements = [
  [stateDir, "~/.openclaw"],
  [home, "~"],
  [work, "~"],
  [openclawDir, "<openclaw>"],
].sort((a, b) => b[0].length - a[0].length);
function sanitiseText(text) {
  let s = text;
  for (const [path, placeholder] of replacements) s = s.split(path).join(placeholder);
  return s.split(TOKEN).join("<token>");
}
/** A session entry without OpenClaw's bulky snapshots (the skills prompt, the system prompt report). */
function slimEntry(entry) {
  const copy = { ...entry };
  if (copy.skillsSnapshot) copy.skillsSnapshot = { prompt: "", skills: [] };
  if (copy.systemPromptReport) copy.systemPromptReport = { source: copy.systemPromptReport.source };
  if (copy.sessionDiffBaseline) copy.sessionDiffBaseline = { version: 1, files: [] };
  return copy;
}

rmSync(join(out, "state"), { recursive: true, force: true });
mkdirSync(join(out, "state"), { recursive: true });
const agentsDir = join(stateDir, "agents");
for (const agent of readdirSync(agentsDir)) {
  const sessionsDir = join(agentsDir, agent, "sessions");
  if (existsSync(sessionsDir)) {
    for (const file of readdirSync(sessionsDir)) {
      const from = join(sessionsDir, file);
      if (!statSync(from).isFile() || !(file === "sessions.json" || file.endsWith(".jsonl"))) continue;
      const to = join(out, "state", "agents", agent, "sessions", file);
      mkdirSync(dirname(to), { recursive: true });
      let text = readFileSync(from, "utf8");
      if (file === "sessions.json") {
        const store = JSON.parse(text);
        for (const key of Object.keys(store)) store[key] = slimEntry(store[key]);
        text = `${JSON.stringify(store, null, 2)}\n`;
      }
      writeFileSync(to, sanitiseText(text));
    }
  }
  const db = join(agentsDir, agent, "agent", "openclaw-agent.sqlite");
  if (existsSync(db)) {
    const to = join(out, "state", "agents", agent, "agent", "openclaw-agent.sqlite");
    mkdirSync(dirname(to), { recursive: true });
    await sanitiseDatabase(db, to);
  }
}
for (const result of Object.values(answers.results)) {
  if (result.ok && result.payload?.entry) result.payload.entry = slimEntry(result.payload.entry);
}
writeFileSync(join(out, "answers.json"), `${sanitiseText(JSON.stringify(answers, null, 2))}\n`);
rmSync(work, { recursive: true, force: true });
process.stdout.write(`recorded OpenClaw ${version} into ${relative(process.cwd(), out)}\n`);

/** Copies OpenClaw's agent database (WAL folded in), sanitised, sessions tables kept, the rest emptied, vacuumed. */
async function sanitiseDatabase(from, to) {
  const { DatabaseSync, backup } = await import("node:sqlite");
  const zlib = await import("node:zlib");
  const source = new DatabaseSync(from);
  await backup(source, to);
  source.close();
  const db = new DatabaseSync(to);
  for (const row of db.prepare("select session_key, entry_json from session_nodes").all()) {
    db.prepare("update session_nodes set entry_json = ? where session_key = ?").run(
      sanitiseText(JSON.stringify(slimEntry(JSON.parse(row.entry_json)))),
      row.session_key,
    );
  }
  // Paths in any other text column (session windows, FTS content tables) become ~/.openclaw too.
  for (const table of db
    .prepare("select name from sqlite_master where type = 'table' and sql not like 'CREATE VIRTUAL%'")
    .all()) {
    for (const column of db.prepare(`pragma table_info("${table.name}")`).all()) {
      if (!/TEXT/i.test(column.type)) continue;
      for (const [path, placeholder] of replacements) {
        db.prepare(
          `update "${table.name}" set "${column.name}" = replace("${column.name}", ?, ?) where instr("${column.name}", ?) > 0`,
        ).run(path, placeholder, path);
      }
    }
  }
  for (const row of db
    .prepare("select session_id, seq, event_json, event_zstd, navigation_json from transcript_events")
    .all()) {
    const nav = row.navigation_json === null ? null : sanitiseText(row.navigation_json);
    if (row.event_json !== null) {
      db.prepare(
        "update transcript_events set event_json = ?, navigation_json = ? where session_id = ? and seq = ?",
      ).run(sanitiseText(row.event_json), nav, row.session_id, row.seq);
    } else {
      const json = sanitiseText(zlib.zstdDecompressSync(row.event_zstd).toString("utf8"));
      db.prepare(
        "update transcript_events set event_zstd = ?, event_utf8_bytes = ?, navigation_json = ? where session_id = ? and seq = ?",
      ).run(
        zlib.zstdCompressSync(Buffer.from(json, "utf8")),
        Buffer.byteLength(json),
        nav,
        row.session_id,
        row.seq,
      );
    }
  }
  // The sessions part of the layout stays; other features' tables (memory index, auth, boards, …) are dropped.
  const keep =
    /^(schema_meta|session_nodes|session_windows|session_key_contract|session_transcript_active_events|transcript_events|transcript_event_identities|transcript_rewrite_watermarks|sqlite_)/;
  const objects = db.prepare("select type, name from sqlite_master where type in ('table', 'view')").all();
  const dropped = [];
  for (const { type, name } of objects) {
    if (keep.test(name) || (/_fts_/.test(name) && type === "table")) continue;
    db.exec(`drop ${type} if exists "${name}"`);
    dropped.push(name);
  }
  // Triggers of kept tables that fed dropped ones (search indexes, validation queues) go with them.
  for (const { name, sql } of db
    .prepare("select name, sql from sqlite_master where type = 'trigger'")
    .all()) {
    if (dropped.some((table) => sql.includes(table))) db.exec(`drop trigger if exists "${name}"`);
  }
  db.exec("vacuum");
  db.close();
  for (const suffix of ["-wal", "-shm"]) rmSync(`${to}${suffix}`, { force: true });
}
