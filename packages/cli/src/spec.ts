/**
 * Every command of `sessions-gateway`, its options with their descriptions and defaults, and the exit codes: the
 * one table that both the argument parser and `--help` read. To add an option, add it to its command here and
 * read it from `values` in the command's handler; the help text and the unknown-option check follow.
 */

/** One option of a {@link CommandSpec}: how it parses and what `--help` says about it. */
export interface OptionSpec {
  /** `string` takes a value (`--port 8080`); `boolean` is a flag (`--json`). */
  type: "string" | "boolean";
  /** One line for the help text. */
  description: string;
  /** What the value looks like in the usage line (`N`, `file.json5`); string options only. */
  placeholder?: string | undefined;
  /** The default as shown in the help text (the handler applies it). */
  default?: string | undefined;
  /** A one-letter alias (`h` for `-h`). */
  short?: string | undefined;
}

/**
 * One command of `sessions-gateway`: the argument parser reads its `options` (anything else is a usage error, exit 2)
 * and `--help` prints its usage line, summary, details, options with defaults, examples and the exit codes.
 */
export interface CommandSpec {
  /** `serve`, `sessions list`, … */
  name: string;
  /** Positional arguments as shown in the usage line (`<key> <message…>`). */
  args?: string | undefined;
  /** One line: what the command does (the top-level help lists it). */
  summary: string;
  /** Paragraphs printed under the usage line. */
  details?: readonly string[] | undefined;
  /** The options it accepts, by long name (`drain-ms`); `--help` is among them. */
  options: Readonly<Record<string, OptionSpec>>;
  /** Command lines printed under "Examples". */
  examples?: readonly string[] | undefined;
}

export const BIN = "sessions-gateway";
/** The gateway the client commands talk to when neither `--url` nor `SESSIONS_GATEWAY_URL` is given. */
export const DEFAULT_URL = "ws://127.0.0.1:18789";

/**
 * The exit codes of `sessions-gateway`, as `[code, meaning]`: 0 success, 1 failure (unreachable gateway, refused
 * call, failed run, store in use), 2 usage error. Every `--help` prints this table.
 */
export const EXIT_CODES: readonly (readonly [code: number, meaning: string])[] = [
  [0, "success (serve: stopped by SIGINT/SIGTERM after draining)"],
  [
    1,
    "failure: the gateway is unreachable or refused the call, a run failed or timed out, the store is in use, an import skipped an entry",
  ],
  [2, "usage: unknown command or option, a missing argument or an invalid value"],
];

/** The environment variables `sessions-gateway` reads, as `[name, meaning]`, printed by every `--help`. */
export const ENVIRONMENT: readonly (readonly [name: string, meaning: string])[] = [
  ["SESSIONS_GATEWAY_TOKEN", "the operator token: serve requires it off loopback; client commands send it"],
  ["SESSIONS_GATEWAY_URL", `the gateway client commands talk to (default ${DEFAULT_URL})`],
  [
    "SESSIONS_GATEWAY_STORE",
    "serve: the Postgres URL of --store (keeps the password out of the process list)",
  ],
  ["SESSIONS_LOG_LEVEL", "serve: the log level of --log-level (debug, info, warn, error or silent)"],
  [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "serve: export traces over OTLP/HTTP (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json; OTEL_SERVICE_NAME)",
  ],
];

const HELP_OPTION: Readonly<Record<string, OptionSpec>> = {
  help: { type: "boolean", short: "h", description: "show this help" },
};

/** Options every client command (`sessions …`) takes. */
const CLIENT_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  url: {
    type: "string",
    placeholder: "ws://host:port",
    description: "the gateway to talk to",
    default: `$SESSIONS_GATEWAY_URL, else ${DEFAULT_URL}`,
  },
  json: { type: "boolean", description: "print the answer as JSON instead of a table" },
};

/**
 * `sessions-gateway serve`: its options (`--config`, `--port`, `--host`, `--db`, `--store`, `--drain-ms`, …) and
 * its help text.
 */
export const SERVE: CommandSpec = {
  name: "serve",
  summary: "run a gateway: the WebSocket server, the store and an agent runner, until SIGINT/SIGTERM",
  details: [
    "Listens on --host:--port and prints `listening ws://…`. Without SESSIONS_GATEWAY_TOKEN (and without tokens in the config) it serves loopback only.",
    "On SIGINT/SIGTERM it stops taking new work, lets running work finish for up to --drain-ms, tells clients `shutdown`, and exits 0. Accepted work that did not finish resumes on the next start.",
    'The config file is the sessions config (session, tools, agents, channels) plus an optional `gateway` block for the server itself: { host, port, db, store, tickIntervalMs, tokens: [{ token, requesterKey?, sandboxed?, scopes?, label? }], cluster: { leaseTtlMs?, recoveryIntervalMs? } } (`scopes: ["operator.read"]` makes a read-only token). Flags win over the file.',
  ],
  options: {
    config: {
      type: "string",
      placeholder: "file.json5",
      description: "sessions config (JSON or JSON5), with an optional `gateway` block",
    },
    port: {
      type: "string",
      placeholder: "N",
      description: "port to listen on (0 picks a free one)",
      default: "18789",
    },
    host: { type: "string", placeholder: "addr", description: "address to bind", default: "127.0.0.1" },
    db: {
      type: "string",
      placeholder: "path",
      description: "SQLite database file (one gateway at a time per file)",
      default: ".sessions/gateway.db",
    },
    store: {
      type: "string",
      placeholder: "postgres://…",
      description:
        "a Postgres database instead of --db, shared by every gateway given the same URL (`?schema=name` picks the schema)",
      default: "$SESSIONS_GATEWAY_STORE, else SQLite at --db",
    },
    runner: {
      type: "string",
      placeholder: "echo|module.js",
      description: "`echo`, or a module whose default export is an AgentRunner",
      default: "echo",
    },
    record: {
      type: "string",
      placeholder: "file.jsonl",
      description:
        "append every runner turn (inputs, streamed text, tool calls and their answers, reply) and delivery outcome to this JSONL file, to replay as a test with createReplayRunner (@sessions/testing)",
    },
    "drain-ms": {
      type: "string",
      placeholder: "N",
      description: "on SIGINT/SIGTERM, how long running work may finish before the gateway closes",
      default: "10000",
    },
    a2a: {
      type: "boolean",
      description:
        "serve the agents over A2A on the same port: cards at /a2a/<agentId>/.well-known/agent-card.json, JSON-RPC at /a2a/<agentId> (or `gateway.a2a` in the config)",
    },
    "no-console": {
      type: "boolean",
      description:
        "do not serve the operator console and web chat (by default at http://host:port/ and /chat)",
    },
    "log-level": {
      type: "string",
      placeholder: "debug|info|warn|error|silent",
      description:
        "what the gateway and its store log to stderr, one line each (time, level, part, message, fields as JSON)",
      default: "$SESSIONS_LOG_LEVEL, else info",
    },
    ...HELP_OPTION,
  },
  examples: [
    "SESSIONS_GATEWAY_TOKEN=dev sessions-gateway serve --config gateway.json5",
    "sessions-gateway serve --port 0 --db /tmp/gw.db --runner ./my-runner.js",
    "sessions-gateway serve --runner ./my-runner.js --record exchange.jsonl",
    "SESSIONS_GATEWAY_STORE=postgres://gw:secret@db.internal/sessions sessions-gateway serve --host 0.0.0.0",
  ],
};

export const SESSIONS_LIST: CommandSpec = {
  name: "sessions list",
  summary: "list sessions, newest first",
  details: [
    "Kinds and channels are shown as the session tools show them: kind main, group, cron, hook, node or other; channel `unknown` for a session that has no channel (the main session, sub-agents).",
  ],
  options: {
    limit: { type: "string", placeholder: "N", description: "how many sessions", default: "50" },
    agent: { type: "string", placeholder: "id", description: "only this agent's sessions" },
    ...CLIENT_OPTIONS,
    ...HELP_OPTION,
  },
  examples: ["sessions-gateway sessions list --agent main --limit 10"],
};

export const SESSIONS_HISTORY: CommandSpec = {
  name: "sessions history",
  args: "<key>",
  summary: "print a session's transcript",
  details: ["<key> is a session key (`main`, `agent:ops:discord:group:123`)."],
  options: {
    limit: {
      type: "string",
      placeholder: "N",
      description: "how many of the latest messages",
      default: "20",
    },
    ...CLIENT_OPTIONS,
    ...HELP_OPTION,
  },
  examples: ["sessions-gateway sessions history main --limit 5"],
};

export const SESSIONS_SEND: CommandSpec = {
  name: "sessions send",
  args: "<key> <message…>",
  summary: "send a message into a session and start a run (chat.send)",
  details: [
    "Prints the run status and id at once (`started <runId>`); with --wait, waits for the run and prints its reply (exit 1 if it fails or times out).",
  ],
  options: {
    wait: { type: "boolean", description: "wait for the run and print its reply" },
    timeout: {
      type: "string",
      placeholder: "seconds",
      description: "with --wait: how long to wait",
      default: "120",
    },
    ...CLIENT_OPTIONS,
    ...HELP_OPTION,
  },
  examples: ['sessions-gateway sessions send main "status of #ops?" --wait'],
};

export const SESSIONS_SPAWN: CommandSpec = {
  name: "sessions spawn",
  args: "<requesterKey> <task…>",
  summary: "spawn a sub-agent for a task on behalf of a session (sessions_spawn)",
  details: [
    "Prints `accepted <childSessionKey> (run <runId>)`; the child announces its result to the requester.",
  ],
  options: {
    agent: {
      type: "string",
      placeholder: "id",
      description: "run the child under this agent (needs subagents.allowAgents)",
      default: "the requester's agent",
    },
    label: { type: "string", placeholder: "text", description: "a label for the child session" },
    ...CLIENT_OPTIONS,
    ...HELP_OPTION,
  },
  examples: ['sessions-gateway sessions spawn main "summarise the incident" --agent research'],
};

export const SESSIONS_PATCH: CommandSpec = {
  name: "sessions patch",
  args: "<key>",
  summary: "change a session's label, send policy or model (sessions.patch)",
  options: {
    label: { type: "string", placeholder: "text", description: "set the label" },
    "send-policy": {
      type: "string",
      placeholder: "allow|deny|inherit",
      description: "per-session send policy override (`inherit` clears it)",
    },
    model: { type: "string", placeholder: "id", description: "set the model" },
    ...CLIENT_OPTIONS,
    ...HELP_OPTION,
  },
  examples: ["sessions-gateway sessions patch main --label home --send-policy deny"],
};

/** `sessions-gateway replay`: a recorded exchange played back on a gateway of its own, identical or with a diff. */
export const REPLAY: CommandSpec = {
  name: "replay",
  args: "<recording.jsonl>",
  summary: "replay a recorded exchange on a fresh gateway and report where it diverges",
  details: [
    "Plays a recording made with `serve --record` back through a gateway of its own (a fresh SQLite file, removed afterwards) with the given config: the exchange's first messages are sent again (`agent` and `chat.send` turns, in order), every turn the gateway asks for is answered from the recording, the recorded tool calls are made again and must get the recorded answers, and the deliveries must come out the same. Ids and times are paired up, not compared.",
    "Exits 0 when the replay is the recording's, byte for byte after normalisation; 1 with a diff when a turn, a tool's answer or a delivery differs (a changed routing rule, visibility, policy or announce).",
  ],
  options: {
    config: {
      type: "string",
      placeholder: "file.json5",
      description:
        "the sessions config to replay under (as `serve --config`; its `gateway` block is ignored)",
    },
    ...HELP_OPTION,
  },
  examples: [
    "sessions-gateway serve --config gateway.json5 --runner ./my-runner.js --record exchange.jsonl",
    "sessions-gateway replay exchange.jsonl --config gateway.json5",
  ],
};

/** `sessions-gateway import-openclaw`: an OpenClaw state directory into the gateway's store. */
export const IMPORT_OPENCLAW: CommandSpec = {
  name: "import-openclaw",
  args: "<stateDir>",
  summary: "import an OpenClaw state directory (sessions, transcripts, routes) into the store",
  details: [
    "<stateDir> is OpenClaw's state directory (~/.openclaw, or $OPENCLAW_STATE_DIR): the one holding agents/. Both layouts are read: OpenClaw 2026.9's per-agent SQLite (agents/<id>/agent/openclaw-agent.sqlite) and early 2026's agents/<id>/sessions/sessions.json with JSONL transcripts. OpenClaw's files are only read.",
    "Each session is written in one transaction, all or nothing. Sessions already imported (same key and sessionId) are left alone, so running it again changes nothing; a key the store has for another session is reported as a conflict and left alone. An entry that cannot be read is reported with its file and reason, and skipped.",
    "Prints one line per session and a summary. Exit 0 when everything was imported or already there, 1 when an entry was skipped (unreadable, conflict). Stop the gateway first: a SQLite store serves one process at a time.",
  ],
  options: {
    "dry-run": { type: "boolean", description: "print what would be imported; write nothing" },
    db: SERVE.options.db as OptionSpec,
    store: SERVE.options.store as OptionSpec,
    config: {
      type: "string",
      placeholder: "file.json5",
      description:
        "the gateway's config, for its session.mainKey (bare `main` keys map to agent:<id>:<mainKey>)",
    },
    json: { type: "boolean", description: "print the report as JSON" },
    ...HELP_OPTION,
  },
  examples: [
    "sessions-gateway import-openclaw ~/.openclaw --dry-run",
    "sessions-gateway import-openclaw ~/.openclaw --db .sessions/gateway.db",
  ],
};

/** Every command of `sessions-gateway`, in the order the top-level help lists them: `serve`, then `sessions …`. */
export const COMMANDS: readonly CommandSpec[] = [
  SERVE,
  REPLAY,
  SESSIONS_LIST,
  SESSIONS_HISTORY,
  SESSIONS_SEND,
  SESSIONS_SPAWN,
  SESSIONS_PATCH,
  IMPORT_OPENCLAW,
];

/** The top level: `--help` and `--version` only; everything else belongs to a command. */
export const ROOT_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  ...HELP_OPTION,
  version: { type: "boolean", short: "v", description: "print the version" },
};
