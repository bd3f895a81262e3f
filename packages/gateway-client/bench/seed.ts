// Seed data for the wire bench (the gateway bench's mix): session entries, main sessions, transcript messages, and
// better-sqlite3 for writing a long transcript in one transaction.
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { sessionKindOf, type TranscriptMessage } from "@sessions/core";
import type { StoredEntry } from "@sessions/gateway";
import { DAY, localRequire, weighted } from "./harness.js";

export const AGENTS = [
  ["main", 0.5],
  ["ops", 0.2],
  ["research", 0.15],
  ["support", 0.1],
  ["billing", 0.05],
] as const;
const CHANNELS = ["discord", "telegram", "slack", "whatsapp", "signal"] as const;
const SHAPES = [
  ["group", 0.45],
  ["direct", 0.2],
  ["subagent", 0.2],
  ["cron", 0.08],
  ["hook", 0.04],
  ["node", 0.03],
] as const;
const LOREM =
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore " +
  "magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo " +
  "consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.";

export function seedEntry(i: number, rand: () => number, now: number): StoredEntry {
  const agentId = weighted(rand, AGENTS);
  const shape = weighted(rand, SHAPES);
  const channel = CHANNELS[i % CHANNELS.length] as string;
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
      const to = `channel:${i}`;
      entry = {
        ...base,
        key: `agent:${agentId}:${channel}:group:${i}`,
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

/** better-sqlite3 as far as the seeding uses it (its types belong to @sessions/gateway's devDependencies). */
interface BareStatement {
  run(...params: unknown[]): unknown;
}
interface BareDatabase {
  pragma(source: string): unknown;
  prepare(sql: string): BareStatement;
  transaction<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
  close(): void;
}
type BareDatabaseConstructor = new (path: string) => BareDatabase;

/** better-sqlite3 is a dependency of @sessions/gateway, not of this package: load it from the gateway's folder. */
export function loadBetterSqlite(): BareDatabaseConstructor {
  const gatewayEntry = localRequire.resolve("@sessions/gateway");
  return createRequire(gatewayEntry)("better-sqlite3") as BareDatabaseConstructor;
}
