import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PROTOCOL_VERSION, type WireError } from "@sessions/core";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";

const here = dirname(fileURLToPath(import.meta.url));
const token = "crash-idempotency-token";
const SESSIONS = 10;
const WORKERS = 16;
const MAX_WRITES = 3000;
/** Bounds the growth phase only: new writes stop after this, however slow the machine. Retries never stop on time. */
const GROWTH_MS = 30_000;
/** A request is retried until it is answered; this many lost or retryable answers in a row means it never will be. */
const MAX_ATTEMPTS = 40;
/** Per request: far above the few milliseconds an answer takes, so only a request that is truly lost times out. */
const REQUEST_TIMEOUT_MS = 60_000;
/** Far above the ~1 s a gateway takes to start on a loaded machine. */
const START_TIMEOUT_MS = 120_000;

const children = new Set<ChildProcess>();
const dirs: string[] = [];
afterEach(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  children.clear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** mulberry32: a small seeded PRNG, so a failing schedule can be replayed with CRASH_SEED. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface GatewayProcess {
  child: ChildProcess;
  port: number;
  exited: Promise<void>;
}

function startGateway(db: string): Promise<GatewayProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(here, "crash-idempotency.fixture.ts"), db, token],
      { cwd: here, stdio: ["ignore", "pipe", "pipe"] },
    );
    children.add(child);
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`gateway did not start within ${START_TIMEOUT_MS} ms: ${err}`));
    }, START_TIMEOUT_MS);
    child.stderr?.on("data", (d) => {
      err += String(d);
    });
    child.stdout?.on("data", (d) => {
      out += String(d);
      const match = /listening (\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ child, port: Number(match[1]), exited });
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited (${code ?? signal}) before listening: ${err}`));
    });
  });
}

type Outcome =
  | { ok: true; payload: Record<string, unknown> }
  | { ok: false; error: WireError }
  | { ok: false; lost: string };

interface Wire {
  readonly closed: boolean;
  request(method: string, params: unknown, timeoutMs?: number): Promise<Outcome>;
  close(): void;
}

/** A thin protocol client with no retries or reconnects of its own: the test decides what is retried. */
function connectWire(port: number, onEvent: (event: string, payload: unknown) => void): Promise<Wire> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}`);
  const pending = new Map<string, (outcome: Outcome) => void>();
  let closed = false;
  let next = 0;
  const wire: Wire = {
    get closed() {
      return closed;
    },
    request(method, params, timeoutMs = REQUEST_TIMEOUT_MS) {
      if (closed) return Promise.resolve({ ok: false, lost: "socket closed" });
      const id = `r${++next}`;
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          resolve({ ok: false, lost: `no answer in ${timeoutMs} ms` });
        }, timeoutMs);
        pending.set(id, (outcome) => {
          clearTimeout(timer);
          resolve(outcome);
        });
        ws.send(JSON.stringify({ type: "req", id, method, params }));
      });
    },
    close: () => ws.close(),
  };
  ws.on("message", (data) => {
    const frame = JSON.parse(String(data));
    if (frame.type === "event") onEvent(frame.event, frame.payload);
    else if (frame.type === "res") {
      const settle = pending.get(frame.id);
      pending.delete(frame.id);
      settle?.(frame.ok ? { ok: true, payload: frame.payload ?? {} } : { ok: false, error: frame.error });
    }
  });
  ws.on("close", () => {
    closed = true;
    for (const settle of pending.values()) settle({ ok: false, lost: "socket closed" });
    pending.clear();
  });
  ws.on("error", () => {});
  return new Promise((resolve, reject) => {
    ws.once("error", reject);
    ws.once("open", () => {
      const connect = {
        minProtocol: PROTOCOL_VERSION,
        maxProtocol: PROTOCOL_VERSION,
        client: { id: "crash-idempotency", version: "0", platform: "node", mode: "backend" },
        auth: { token },
      };
      wire.request("connect", connect).then((outcome) => {
        if (outcome.ok) resolve(wire);
        else reject(new Error(`connect failed: ${JSON.stringify(outcome)}`));
      }, reject);
    });
  });
}

interface Write {
  index: number;
  method: "agent" | "chat.send";
  sessionKey: string;
  text: string;
  params: Record<string, unknown>;
  /** The gateway life in which it was first sent. */
  firstLife: number;
  attempts: number;
  /** Every runId an `ok` response returned for its key. */
  runIds: string[];
  errors: string[];
}

describe("idempotent writes across SIGKILL (exactly once)", () => {
  it("retries every unacknowledged chat.send and agent with its key and finds each message exactly once", async () => {
    const seed = Number(process.env.CRASH_SEED) || Math.floor(Math.random() * 2 ** 31);
    const replay = `replay: cd packages/gateway-client && CRASH_SEED=${seed} npx vitest run src/crash-idempotency.test.ts`;
    console.log(`crash-idempotency seed ${seed} (${replay})`);
    const random = seededRandom(seed);
    const dir = mkdtempSync(join(tmpdir(), "sessions-crash-idempotency-"));
    dirs.push(dir);
    const db = join(dir, "gw.db");
    const started = Date.now();
    const growthDeadline = started + GROWTH_MS;

    const writes: Write[] = [];
    const newWrite = (life: number): Write => {
      const index = writes.length;
      const method = random() < 0.5 ? "agent" : "chat.send";
      const sessionKey = `load-${Math.floor(random() * SESSIONS)}`;
      const text = `m${index}-${seed}`;
      const idempotencyKey = `k${index}-${seed}`;
      const write: Write = {
        index,
        method,
        sessionKey,
        text,
        params: { sessionKey, message: text, idempotencyKey },
        firstLife: life,
        attempts: 0,
        runIds: [],
        errors: [],
      };
      writes.push(write);
      return write;
    };
    const unacked = () => writes.filter((w) => w.runIds.length === 0);
    // Runs that reached their final chat event: they had committed `ok`, whatever happened later.
    const seenFinal = new Set<string>();
    const onEvent = (event: string, payload: unknown) => {
      const chat = payload as { state?: string; runId?: string };
      if (event === "chat" && chat.state === "final" && chat.runId) seenFinal.add(chat.runId);
    };

    /**
     * Sends (or re-sends, same params and key) writes until the socket dies or the queue is empty. While `growing`,
     * new writes join until MAX_WRITES or GROWTH_MS; the retry phase has no clock: every write is sent again until it
     * is answered, or it has been lost MAX_ATTEMPTS times.
     */
    async function drive(wire: Wire, life: number, growing: boolean): Promise<void> {
      const queue = unacked();
      const grow = () =>
        growing && writes.length < MAX_WRITES && Date.now() < growthDeadline ? newWrite(life) : undefined;
      const worker = async () => {
        while (!wire.closed) {
          const write = queue.shift() ?? grow();
          if (write === undefined) return;
          write.attempts++;
          const outcome = await wire.request(write.method, write.params);
          if (outcome.ok) {
            write.runIds.push(String(outcome.payload.runId));
            continue;
          }
          if ("error" in outcome) write.errors.push(`${outcome.error.code}: ${outcome.error.message}`);
          // A live gateway gets a lost or retryable request again at once; a killed one, after its restart.
          const retryable = "lost" in outcome || outcome.error.retryable === true;
          if (!growing && retryable && write.attempts < MAX_ATTEMPTS) queue.push(write);
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, worker));
    }

    const kills = 3 + Math.floor(random() * 3);
    let retried = 0;
    let wire: Wire | undefined;
    for (let life = 0; life <= kills; life++) {
      const gateway = await startGateway(db);
      if (life > 0) retried += unacked().length;
      wire = await connectWire(gateway.port, onEvent);
      if (life === kills) {
        await drive(wire, life, false);
        break;
      }
      const killAfterMs = 50 + Math.floor(random() * 450);
      const killed = sleep(killAfterMs).then(() => {
        gateway.child.kill("SIGKILL");
        return gateway.exited;
      });
      await drive(wire, life, true);
      await killed;
    }
    const live = wire as Wire;
    const where = `seed ${seed} (${replay})`;
    expect(
      unacked().map((w) => ({ text: w.text, errors: w.errors })),
      `${where}: writes never acknowledged`,
    ).toEqual([]);
    expect(retried, `${where}: no write was left unacknowledged by a kill`).toBeGreaterThan(0);

    // Every key once more: it must name the run it named before and add nothing.
    await Promise.all(
      writes.map(async (write) => {
        const outcome = await live.request(write.method, write.params);
        if (outcome.ok) write.runIds.push(String(outcome.payload.runId));
        else write.errors.push(JSON.stringify(outcome));
      }),
    );
    const drifted = writes
      .filter((w) => new Set(w.runIds).size !== 1)
      .map((w) => ({ method: w.method, text: w.text, runIds: w.runIds, errors: w.errors }));
    expect.soft(drifted, `${where}: a key answered with different runs`).toEqual([]);

    const byRun = new Map(writes.map((w) => [w.runIds[0] as string, w]));
    const outcomes = new Map<string, { status: string; error?: string; reply?: string }>();
    await Promise.all(
      [...byRun.keys()].map(async (runId) => {
        // A wait that times out is asked again: a slow machine is not a wrong outcome.
        for (let attempt = 1; ; attempt++) {
          const outcome = await live.request("agent.wait", { runId, timeoutMs: 10_000 });
          const status = outcome.ok ? (outcome.payload as { status: string }).status : undefined;
          if (status === "timeout" && attempt < MAX_ATTEMPTS) continue;
          outcomes.set(
            runId,
            outcome.ok
              ? (outcome.payload as { status: string })
              : { status: `failed ${JSON.stringify(outcome)}` },
          );
          break;
        }
      }),
    );
    const badRuns: unknown[] = [];
    for (const [runId, write] of byRun) {
      const outcome = outcomes.get(runId);
      const interruptible = write.firstLife < kills && !seenFinal.has(runId);
      const fine =
        outcome?.status === "ok"
          ? outcome.reply === `echo: ${write.text}`
          : outcome?.status === "error" && interruptible && /^gateway restarted/.test(outcome.error ?? "");
      if (!fine)
        badRuns.push({ method: write.method, text: write.text, runId, firstLife: write.firstLife, outcome });
    }
    expect.soft(badRuns, `${where}: runs that ended wrong`).toEqual([]);

    const userCounts = new Map<string, number>();
    const replyCounts = new Map<string, number>();
    for (const sessionKey of new Set(writes.map((w) => w.sessionKey))) {
      for (let offset: number | null = 0; offset !== null; ) {
        const page = await live.request("chat.history", { sessionKey, limit: 200, offset });
        if (!page.ok) throw new Error(`${where}: chat.history ${sessionKey}: ${JSON.stringify(page)}`);
        const { messages, nextOffset } = page.payload as {
          messages: { role: string; content: unknown }[];
          nextOffset: number | null;
        };
        for (const message of messages) {
          const text = `${sessionKey}|${String(message.content)}`;
          const counts = message.role === "user" ? userCounts : replyCounts;
          counts.set(text, (counts.get(text) ?? 0) + 1);
        }
        offset = nextOffset;
      }
    }
    const notOnce = writes
      .map((w) => ({
        method: w.method,
        text: w.text,
        times: userCounts.get(`${w.sessionKey}|${w.text}`) ?? 0,
        attempts: w.attempts,
      }))
      .filter((w) => w.times !== 1);
    expect.soft(notOnce, `${where}: user messages not in their transcript exactly once`).toEqual([]);
    const repliedTwice = writes
      .filter((w) => (replyCounts.get(`${w.sessionKey}|echo: ${w.text}`) ?? 0) > 1)
      .map((w) => w.text);
    expect.soft(repliedTwice, `${where}: replies recorded twice`).toEqual([]);

    const errors = [...outcomes.values()].filter((o) => o.status === "error").length;
    console.log(
      `crash-idempotency seed ${seed}: ${kills} kills, ${writes.length} writes, ${retried} retried after a restart, ` +
        `${errors} runs ended by a restart, ${notOnce.length} messages not exactly once, ${Date.now() - started} ms`,
    );
    live.close();
  }, 600_000);
});
