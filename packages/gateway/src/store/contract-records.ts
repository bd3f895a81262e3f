import type { DeliveryRecord, RunRecord, StoredEntry, ThreadBindingRecord } from "./types.js";

/** Records the contract suites build their cases from. */
export const entry = (key: string, updatedAt: number, extra: Partial<StoredEntry> = {}): StoredEntry => ({
  key,
  sessionId: `sid-${key}`,
  agentId: key.split(":")[1] ?? "main",
  kind: "other",
  createdAt: 1,
  updatedAt,
  ...extra,
});
export const delivery = (
  id: string,
  idempotencyKey: string,
  extra: Partial<DeliveryRecord> = {},
): DeliveryRecord => ({
  id,
  idempotencyKey,
  kind: "reply",
  sessionKey: "agent:main:main",
  channel: "discord",
  to: "channel:1",
  text: "hi",
  status: "queued",
  attempts: 0,
  nextAttemptAt: 10,
  createdAt: 10,
  updatedAt: 10,
  ...extra,
});

export const run = (runId: string, extra: Partial<RunRecord> = {}): RunRecord => ({
  runId,
  sessionKey: "s",
  agentId: "main",
  kind: "chat",
  status: "queued",
  createdAt: 1,
  ...extra,
});
export const binding = (threadId: string): ThreadBindingRecord => ({
  channel: "discord",
  accountId: "a",
  threadId,
  sessionKey: "s",
  to: `channel:${threadId}`,
  boundAt: 1,
  lastActivityAt: 1,
  idleHours: 24,
  maxAgeHours: 0,
});
