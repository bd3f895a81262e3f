import { randomUUID } from "node:crypto";
import { channelOf, SessionsError, sessionKindOf } from "@sessions/core";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { type OptionValues, text, usageError, wholeNumber } from "./args.js";
import {
  DEFAULT_URL,
  SESSIONS_HISTORY,
  SESSIONS_LIST,
  SESSIONS_PATCH,
  SESSIONS_SEND,
  SESSIONS_SPAWN,
} from "./spec.js";
import { formatTable } from "./table.js";

/**
 * Where {@link runCli} writes: the process's stdout/stderr by default, or a capture in tests.
 *
 * @example
 * ```ts
 * import { runCli } from "@sessions/cli";
 *
 * const out: string[] = [];
 * const code = await runCli(["sessions", "list", "--help"], { out: (l) => out.push(l), err: () => {}, tty: false });
 * // code === 0, out holds the help text of `sessions list`
 * ```
 */
export interface CliIo {
  /** One line of the command's answer (tables, JSON, help text), without the trailing newline. */
  out: (line: string) => void;
  /** Diagnostics and progress, written as is (errors end with a newline; the spinner rewrites its line with `\r`). */
  err: (text: string) => void;
  /** Whether `err` is a terminal: only then a spinner shows while waiting for a run. */
  tty: boolean;
}

type Connected = { client: GatewayClient; mainKey: string | undefined };

async function withClient<T>(options: OptionValues, fn: (connected: Connected) => Promise<T>): Promise<T> {
  const url = text(options.url) ?? process.env.SESSIONS_GATEWAY_URL ?? DEFAULT_URL;
  const token = process.env.SESSIONS_GATEWAY_TOKEN;
  const client = createGatewayClient({
    url,
    ...(token ? { token } : {}),
    reconnect: false,
    requestTimeoutMs: 15_000,
  });
  try {
    const hello = await Promise.race([
      client.ready(),
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new SessionsError("unavailable", `cannot reach the gateway at ${url}`)),
          5000,
        ).unref(),
      ),
    ]);
    const defaults = (
      hello as { snapshot?: { sessionDefaults?: { mainKey?: unknown } | undefined } | undefined }
    ).snapshot?.sessionDefaults;
    const mainKey = typeof defaults?.mainKey === "string" ? defaults.mainKey : undefined;
    return await fn({ client, mainKey });
  } finally {
    await client.close();
  }
}

function spinner(io: CliIo, label: string): () => void {
  if (!io.tty) return () => {};
  const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
  const started = Date.now();
  let i = 0;
  const timer = setInterval(() => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    io.err(`\r${frames[i++ % frames.length]} ${label} ${seconds}s`);
  }, 80);
  return () => {
    clearInterval(timer);
    io.err("\r\u001b[2K");
  };
}

type WireRow = Record<string, unknown> & { key: string };

const CHAT_TYPES = new Set(["direct", "group", "channel", "unknown"]);

/**
 * A `sessions.list` row with the kind and channel the session tools show (`main` / `unknown` for the main session),
 * not the wire's coarse `direct | group | global | unknown`.
 */
export function toolRow(row: WireRow, mainKey?: string): WireRow {
  const chatType =
    typeof row.chatType === "string" && CHAT_TYPES.has(row.chatType)
      ? (row.chatType as "direct" | "group" | "channel" | "unknown")
      : undefined;
  const kind = sessionKindOf(row.key, {
    ...(mainKey === undefined ? {} : { mainKey }),
    ...(chatType === undefined ? {} : { chatType }),
  });
  const str = (value: unknown) => (typeof value === "string" ? value : undefined);
  const delivery = row.deliveryContext as { channel?: unknown } | undefined;
  const channel = channelOf({
    key: row.key,
    kind,
    channel: str(row.channel),
    lastChannel: str(row.lastChannel),
    deliveryContext: { channel: str(delivery?.channel) },
    chatType,
  });
  return { ...row, kind, channel };
}

function list(options: OptionValues, io: CliIo): Promise<void> {
  const limit = wholeNumber(options.limit, "limit", SESSIONS_LIST.name, 50, { min: 1 });
  const agent = text(options.agent);
  return withClient(options, async ({ client, mainKey }) => {
    const page = await client.sessions.list({ limit, ...(agent ? { agentId: agent } : {}) });
    const sessions = (page.sessions as unknown as WireRow[]).map((row) => toolRow(row, mainKey));
    if (options.json) return io.out(JSON.stringify({ ...page, sessions }, null, 2));
    io.out(formatTable(sessions, ["key", "kind", "channel", "label", "updatedAt", "totalTokens"]));
    io.out(`${page.count} session(s)${page.hasMore ? " (more: --limit)" : ""}`);
  });
}

function history(args: string[], options: OptionValues, io: CliIo): Promise<void> {
  const key = args[0];
  if (key === undefined) throw usageError(`${SESSIONS_HISTORY.name} needs <key>`, SESSIONS_HISTORY.name);
  const limit = wholeNumber(options.limit, "limit", SESSIONS_HISTORY.name, 20, { min: 1 });
  return withClient(options, async ({ client }) => {
    const result = await client.chat.history({ sessionKey: key, limit });
    if (options.json) return io.out(JSON.stringify(result, null, 2));
    const rows = result.messages.map((m) => ({
      seq: m.seq,
      role: m.role,
      text: typeof m.content === "string" ? m.content : JSON.stringify(m.content),
    }));
    io.out(formatTable(rows, ["seq", "role", "text"]));
  });
}

function send(args: string[], options: OptionValues, io: CliIo): Promise<void> {
  const [key, ...words] = args;
  if (key === undefined || words.length === 0)
    throw usageError(`${SESSIONS_SEND.name} needs <key> and <message…>`, SESSIONS_SEND.name);
  const timeout = wholeNumber(options.timeout, "timeout", SESSIONS_SEND.name, 120);
  return withClient(options, async ({ client }) => {
    const sent = await client.chat.send({
      sessionKey: key,
      message: words.join(" "),
      idempotencyKey: randomUUID(),
    });
    if (!options.wait) return io.out(options.json ? JSON.stringify(sent) : `${sent.status} ${sent.runId}`);
    const stop = spinner(io, `waiting for ${key}`);
    try {
      const result = await client.waitRun(sent.runId, { timeoutMs: timeout * 1000 });
      stop();
      if (options.json) return io.out(JSON.stringify(result));
      if (result.status !== "ok")
        throw new SessionsError("timeout", `run ${result.status}: ${result.error ?? "no reply in time"}`);
      io.out(result.reply ?? "(no reply)");
    } finally {
      stop();
    }
  });
}

function spawnChild(args: string[], options: OptionValues, io: CliIo): Promise<void> {
  const [requesterKey, ...words] = args;
  if (requesterKey === undefined || words.length === 0)
    throw usageError(`${SESSIONS_SPAWN.name} needs <requesterKey> and <task…>`, SESSIONS_SPAWN.name);
  const agent = text(options.agent);
  const label = text(options.label);
  return withClient(options, async ({ client }) => {
    const result = (await client.callTool({
      requesterKey,
      name: "sessions_spawn",
      params: {
        task: words.join(" "),
        ...(agent ? { agentId: agent } : {}),
        ...(label ? { label } : {}),
      },
    })) as {
      status: string;
      childSessionKey?: string | undefined;
      runId?: string | undefined;
      error?: string | undefined;
    };
    if (options.json) return io.out(JSON.stringify(result));
    if (result.status !== "accepted") throw new SessionsError("forbidden", result.error ?? result.status);
    io.out(`accepted ${result.childSessionKey} (run ${result.runId})`);
  });
}

function patch(args: string[], options: OptionValues, io: CliIo): Promise<void> {
  const key = args[0];
  if (key === undefined) throw usageError(`${SESSIONS_PATCH.name} needs <key>`, SESSIONS_PATCH.name);
  const policy = text(options["send-policy"]);
  if (policy !== undefined && !["allow", "deny", "inherit"].includes(policy)) {
    throw usageError(
      `--send-policy must be allow, deny or inherit (got ${JSON.stringify(policy)})`,
      SESSIONS_PATCH.name,
      "--send-policy",
    );
  }
  const label = text(options.label);
  const model = text(options.model);
  return withClient(options, async ({ client }) => {
    const result = await client.sessions.patch({
      key,
      ...(label === undefined ? {} : { label }),
      ...(policy === undefined
        ? {}
        : { sendPolicy: policy === "inherit" ? null : (policy as "allow" | "deny") }),
      ...(model === undefined ? {} : { model }),
    });
    if (options.json) return io.out(JSON.stringify(result, null, 2));
    io.out(
      formatTable(
        [result.entry as Record<string, unknown>],
        ["key", "label", "sendPolicy", "model", "updatedAt"],
      ),
    );
  });
}

/** The handler of each `sessions <action>` command. */
export const sessionActions: Readonly<
  Record<string, (args: string[], options: OptionValues, io: CliIo) => Promise<void>>
> = {
  list: (_args, options, io) => list(options, io),
  history,
  send,
  spawn: spawnChild,
  patch,
};
