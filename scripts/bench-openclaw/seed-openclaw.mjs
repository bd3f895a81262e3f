// Writes an OpenClaw state directory in its legacy (early 2026) JSON layout, which OpenClaw's own
// `doctor --session-sqlite import` turns into its 2026.9 SQLite layout: `sessions` sessions for agent `main`, all
// with a two-message transcript except `agent:main:long`, which holds `messages` messages.
//
//   node seed-openclaw.mjs <stateDir> [sessions=10001] [messages=200000]
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const LONG_KEY = "agent:main:long";

const SENTENCES = [
  "How is the deploy going?",
  "The deploy finished without errors.",
  "Can you summarise the notes?",
  "Sure, the notes cover three topics.",
  "What is the weather like?",
  "It is sunny and mild today.",
];
const USAGE = { input: 10, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 20 };
const COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

/** One session's JSONL transcript: a header line, then `count` messages alternating user and assistant. */
function transcript(stateDir, sessionId, count, t0) {
  const timestamp = new Date(t0).toISOString();
  const start = { type: "session", version: 3, id: sessionId, timestamp, cwd: join(stateDir, "workspace") };
  const lines = [JSON.stringify(start)];
  let parentId = null;
  for (let i = 0; i < count; i++) {
    const id = `${randomUUID().slice(0, 8)}${i.toString(16)}`;
    const ts = t0 + i * 1000;
    const content = [{ type: "text", text: `${SENTENCES[i % SENTENCES.length]} (#${i})` }];
    const message =
      i % 2 === 0
        ? { role: "user", content, timestamp: ts }
        : {
            role: "assistant",
            content,
            api: "openai-completions",
            provider: "fake",
            model: "fake-1",
            usage: { ...USAGE, cost: COST },
            stopReason: "stop",
            timestamp: ts,
          };
    lines.push(
      JSON.stringify({ type: "message", id, parentId, timestamp: new Date(ts).toISOString(), message }),
    );
    parentId = id;
  }
  return `${lines.join("\n")}\n`;
}

/** Writes `agents/main/sessions/sessions.json` and one `<sessionId>.jsonl` per session under `stateDir`. */
export function seedOpenClawState(stateDir, sessions = 10_001, messages = 200_000) {
  const dir = join(stateDir, "agents/main/sessions");
  mkdirSync(dir, { recursive: true });
  const base = Date.UTC(2026, 0, 1);
  const index = {};
  for (let i = 0; i < sessions; i++) {
    const sessionId = randomUUID();
    const key = i === 0 ? LONG_KEY : `agent:main:bench-${String(i).padStart(5, "0")}`;
    const count = i === 0 ? messages : 2;
    const t0 = i === 0 ? base : base + i * 60_000;
    // The long session is the newest, so it heads the first page of `sessions.list`.
    const updatedAt = i === 0 ? base + sessions * 60_000 + messages * 1000 : t0 + count * 1000;
    index[key] = {
      sessionId,
      updatedAt,
      systemSent: true,
      abortedLastRun: false,
      chatType: "direct",
      sessionStartedAt: t0,
      lastInteractionAt: updatedAt,
    };
    writeFileSync(join(dir, `${sessionId}.jsonl`), transcript(stateDir, sessionId, count, t0));
  }
  writeFileSync(join(dir, "sessions.json"), JSON.stringify(index, null, 1));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [stateDir, sessions, messages] = process.argv.slice(2);
  if (stateDir === undefined)
    throw new Error("usage: node seed-openclaw.mjs <stateDir> [sessions] [messages]");
  seedOpenClawState(stateDir, Number(sessions ?? 10_001), Number(messages ?? 200_000));
}
