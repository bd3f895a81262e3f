// The data the benches seed (the gateway's and the wire bench): a realistic mix of session entries and transcript
// messages, and a long transcript written in the store's row format in one transaction.
import { randomUUID } from "node:crypto";
import { sessionKindOf, type TranscriptMessage } from "@sessions/core";
import type { StoredEntry } from "../src/index.js";
import { DAY, weighted } from "./kit.js";

export const AGENTS = [
  ["main", 0.5],
  ["ops", 0.2],
  ["research", 0.15],
  ["support", 0.1],
  ["billing", 0.05],
] as const;
export const CHANNELS = ["discord", "telegram", "slack", "whatsapp", "signal"] as const;
export const SHAPES = [
  ["group", 0.45],
  ["direct", 0.2],
  ["subagent", 0.2],
  ["cron", 0.08],
  ["hook", 0.04],
  ["node", 0.03],
] as const;
export const LOREM =
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore " +
  "magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo " +
  "consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.";

export function seedEntry(i: number, rand: () => number, now: number): StoredEntry {
  const agentId = weighted(rand, AGENTS);
  const shape = weighted(rand, SHAPES);
  const channel = CHANNELS[i % CHANNELS.length] as string;
  // Skewed towards recent activity: about 10% of sessions were updated in the last day, the rest over 90 days.
  const updatedAt = now - Math.floor(rand() ** 2 * 90 * DAY);
  const base = {
    sessionId: randomUUID(),
    agentId,
    createdAt: updatedAt - Math.floor(rand() * 7 * DAY),
    updatedAt,
    model: rand() < 0.5 ? "gpt-5-mini" : "claude-sonnet",
    inputTokens: Math.floor(rand() * 50_000),
    outputTokens: Math.floor(rand() * 10_000),
    systemSent: true,
  };
  let entry: Omit<StoredEntry, "kind">;
  switch (shape) {
    case "group": {
      const thread = rand() < 0.2 ? `:thread:${i * 7}` : "";
      const to = `channel:${i}`;
      entry = {
        ...base,
        key: `agent:${agentId}:${channel}:group:${i}${thread}`,
        channel,
        chatType: "group",
        displayName: `#room-${i}`,
        deliveryContext: { channel, to, accountId: "default" },
        lastChannel: channel,
        lastTo: to,
        lastAccountId: "default",
      };
      break;
    }
    case "direct":
      entry = {
        ...base,
        key: `agent:${agentId}:${channel}:direct:user${i}`,
        channel,
        chatType: "direct",
        displayName: `User ${i}`,
        deliveryContext: { channel, to: `user${i}`, accountId: "default" },
        lastChannel: channel,
        lastTo: `user${i}`,
      };
      break;
    case "subagent":
      entry = {
        ...base,
        key: `agent:${agentId}:subagent:${randomUUID()}`,
        spawnedBy: `agent:${agentId}:main`,
        spawnDepth: 1,
        label: `task ${i}`,
        // Sub-agents kept after their announce are archived an hour later.
        ...(updatedAt < now - DAY ? { archivedAt: updatedAt + 3600_000 } : {}),
      };
      break;
    case "cron":
      entry = { ...base, key: `agent:${agentId}:cron:job-${i}`, label: `nightly ${i}` };
      break;
    case "hook":
      entry = { ...base, key: `agent:${agentId}:hook:webhook-${i}` };
      break;
    case "node":
      entry = { ...base, key: `agent:${agentId}:node:node-${i}` };
      break;
  }
  return {
    ...entry,
    kind: sessionKindOf(entry.key, entry.chatType === undefined ? {} : { chatType: entry.chatType }),
  };
}

export function mainEntry(agentId: string, now: number): StoredEntry {
  const key = `agent:${agentId}:main`;
  return {
    key,
    sessionId: randomUUID(),
    agentId,
    createdAt: now - 30 * DAY,
    updatedAt: now - 60_000,
    kind: sessionKindOf(key),
  };
}

export function transcriptMessage(i: number, ts: number): TranscriptMessage {
  return i % 2 === 1
    ? {
        role: "user",
        content: `Question ${i}: ${LOREM.slice(0, 40 + (i % 120))}`,
        ts,
        sender: { id: "u42", name: "Ada", channel: "discord" },
      }
    : {
        role: "assistant",
        content: `Answer ${i}: ${LOREM.slice(0, 80 + (i % 200))}`,
        ts,
        runId: `run-${i >> 1}`,
      };
}

/** better-sqlite3 as far as the seeding uses it (the wire bench loads it from the gateway's dependencies). */
export interface BareDatabase {
  pragma(source: string): unknown;
  prepare(sql: string): { run(...params: unknown[]): unknown };
  transaction<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
}

/**
 * Writes messages 1…`count` of `key` in the store's exact row format, in one transaction, and checkpoints: appends
 * one by one would take minutes for a million.
 */
export function writeTranscriptRows(db: BareDatabase, key: string, count: number, now: number): void {
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  const insert = db.prepare("INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)");
  db.transaction(() => {
    for (let seq = 1; seq <= count; seq++) {
      const stored = { ...transcriptMessage(seq, now - DAY + seq), seq };
      insert.run(key, seq, JSON.stringify(stored));
    }
  })();
  db.pragma("wal_checkpoint(TRUNCATE)");
}
