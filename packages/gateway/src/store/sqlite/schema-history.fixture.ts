// The SQLite schemas that shipped before the versioned migrations, exactly as each commit created a new file
// (DDL copied from git history), with a few rows in each version's row format. Used by migrations.test.ts.

/** `SCHEMA` of packages/gateway/src/store/sqlite.ts at c79d7d2 (unchanged through e87dcef). */
const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
  key TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  spawned_by TEXT,
  label TEXT,
  display_name TEXT,
  archived INTEGER NOT NULL DEFAULT 0,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_updated ON entries (archived, updated_at DESC, key);
CREATE INDEX IF NOT EXISTS entries_kind ON entries (archived, kind, updated_at DESC, key);
CREATE INDEX IF NOT EXISTS entries_agent ON entries (archived, agent_id, updated_at DESC, key);
CREATE INDEX IF NOT EXISTS entries_spawned_by ON entries (spawned_by, updated_at DESC);
CREATE INDEX IF NOT EXISTS entries_session_id ON entries (session_id);
CREATE INDEX IF NOT EXISTS entries_label ON entries (label);
CREATE TABLE IF NOT EXISTS messages (
  session_key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (session_key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  idempotency_key TEXT UNIQUE,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  session_key TEXT NOT NULL,
  run_id TEXT,
  status TEXT NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS deliveries_session ON deliveries (session_key, created_at DESC);
CREATE INDEX IF NOT EXISTS deliveries_run ON deliveries (run_id);
CREATE TABLE IF NOT EXISTS routes (
  session_key TEXT NOT NULL,
  channel TEXT NOT NULL,
  account_id TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (session_key, channel, account_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS subagents (
  child_key TEXT PRIMARY KEY,
  requester_key TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  archive_at INTEGER,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS subagents_requester ON subagents (requester_key, status);
CREATE INDEX IF NOT EXISTS subagents_status ON subagents (status);
CREATE INDEX IF NOT EXISTS subagents_archive ON subagents (archive_at) WHERE archive_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS thread_bindings (
  channel TEXT NOT NULL,
  account_id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  session_key TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (channel, account_id, thread_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS thread_bindings_session ON thread_bindings (session_key);
`;

const ENTRY = JSON.stringify({
  key: "agent:main:discord:group:g1",
  sessionId: "sid-1",
  agentId: "main",
  kind: "group",
  createdAt: 1000,
  updatedAt: 2000,
  label: "team",
});
const MESSAGES = [1, 2, 3].map((seq) =>
  JSON.stringify({ role: seq % 2 === 1 ? "user" : "assistant", content: `m${seq}`, ts: 1000 + seq, seq }),
);
const RUN = JSON.stringify({
  runId: "run-1",
  sessionKey: "agent:main:discord:group:g1",
  agentId: "main",
  kind: "chat",
  status: "ok",
  createdAt: 1500,
  idempotencyKey: "idem-1",
  reply: "m2",
});
const DELIVERY = JSON.stringify({
  id: "del-1",
  idempotencyKey: "out-1",
  kind: "reply",
  sessionKey: "agent:main:discord:group:g1",
  runId: "run-1",
  channel: "discord",
  to: "channel:g1",
  text: "m2",
  status: "queued",
  attempts: 1,
  nextAttemptAt: 3000,
  createdAt: 1600,
  updatedAt: 1700,
});
const ROUTE = JSON.stringify({
  sessionKey: "agent:main:discord:group:g1",
  channel: "discord",
  accountId: "default",
  to: "channel:g1",
  updatedAt: 1800,
});
const SUBAGENT = JSON.stringify({
  childKey: "agent:main:subagent:c1",
  requesterKey: "agent:main:discord:group:g1",
  runId: "run-2",
  task: "look",
  mode: "run",
  cleanup: "keep",
  status: "done",
  createdAt: 1900,
  archiveAt: 5000,
});
const BINDING = JSON.stringify({
  channel: "discord",
  accountId: "default",
  threadId: "t1",
  sessionKey: "agent:main:subagent:c1",
  to: "channel:t1",
  boundAt: 1900,
  lastActivityAt: 1900,
  idleHours: 24,
  maxAgeHours: 0,
});
const q = (json: string) => `'${json.replaceAll("'", "''")}'`;

const SEED_COMMON = `
INSERT INTO meta (key, value) VALUES ('schema_version', '1');
INSERT INTO entries (key, session_id, agent_id, kind, updated_at, spawned_by, label, display_name, archived, data)
  VALUES ('agent:main:discord:group:g1', 'sid-1', 'main', 'group', 2000, NULL, 'team', NULL, 0, ${q(ENTRY)});
${MESSAGES.map((m, i) => `INSERT INTO messages (session_key, seq, data) VALUES ('agent:main:discord:group:g1', ${i + 1}, ${q(m)});`).join("\n")}
INSERT INTO deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at, data)
  VALUES ('del-1', 'out-1', 'agent:main:discord:group:g1', 'run-1', 'queued', 3000, 1600, ${q(DELIVERY)});
INSERT INTO routes (session_key, channel, account_id, updated_at, data)
  VALUES ('agent:main:discord:group:g1', 'discord', 'default', 1800, ${q(ROUTE)});
INSERT INTO subagents (child_key, requester_key, status, created_at, archive_at, data)
  VALUES ('agent:main:subagent:c1', 'agent:main:discord:group:g1', 'done', 1900, 5000, ${q(SUBAGENT)});
INSERT INTO thread_bindings (channel, account_id, thread_id, session_key, data)
  VALUES ('discord', 'default', 't1', 'agent:main:subagent:c1', ${q(BINDING)});
`;

const FOLLOW_UP_RUN = JSON.stringify({
  runId: "run-3",
  sessionKey: "agent:ops:main",
  agentId: "ops",
  kind: "inter_session",
  status: "ok",
  createdAt: 2100,
  followUp: {
    kind: "agent_to_agent",
    requesterKey: "agent:main:main",
    requesterChannel: "discord",
    request: "hi",
  },
});

export interface HistoricalSchema {
  /** What the file looks like, for test names. */
  name: string;
  /** Commits whose code created files of this shape. */
  commits: string[];
  /** DDL and rows, in one script. */
  sql: string;
  /** Runs with a follow-up still pending in the seeded rows. */
  pendingFollowUps: string[];
}

/** Every shape a file could have before `meta.schema_version` 2, oldest first. */
export const HISTORICAL_SCHEMAS: readonly HistoricalSchema[] = [
  {
    name: "version 1 without runs.follow_up_pending",
    commits: ["c79d7d2", "a755f33"],
    sql: `${SCHEMA_V1}
${SEED_COMMON}
INSERT INTO runs (run_id, status, idempotency_key, data) VALUES ('run-1', 'ok', 'idem-1', ${q(RUN)});
`,
    pendingFollowUps: [],
  },
  {
    name: "version 1 with runs.follow_up_pending",
    commits: ["e87dcef"],
    sql: `${SCHEMA_V1}
ALTER TABLE runs ADD COLUMN follow_up_pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS runs_follow_up ON runs (follow_up_pending) WHERE follow_up_pending = 1;
${SEED_COMMON}
INSERT INTO runs (run_id, status, idempotency_key, follow_up_pending, data) VALUES ('run-1', 'ok', 'idem-1', 0, ${q(RUN)});
INSERT INTO runs (run_id, status, idempotency_key, follow_up_pending, data) VALUES ('run-3', 'ok', NULL, 1, ${q(FOLLOW_UP_RUN)});
`,
    pendingFollowUps: ["run-3"],
  },
];
