import { randomUUID } from "node:crypto";
import { SessionsError } from "@sessions/core";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { formatTable } from "./table.js";

export interface ClientOptions {
  url?: string;
  json?: boolean;
  limit?: string;
  agent?: string;
  label?: string;
  "send-policy"?: string;
  model?: string;
  wait?: boolean;
  timeout?: string;
}

type Out = { out: (line: string) => void; err: (text: string) => void; tty: boolean };

function usage(message: string): never {
  throw new SessionsError("invalid_params", message);
}

function int(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) usage(`--${name} must be a whole number (got ${value})`);
  return n;
}

async function withClient<T>(options: ClientOptions, fn: (client: GatewayClient) => Promise<T>): Promise<T> {
  const url = options.url ?? process.env.SESSIONS_GATEWAY_URL ?? "ws://127.0.0.1:18789";
  const token = process.env.SESSIONS_GATEWAY_TOKEN;
  const client = createGatewayClient({
    url,
    ...(token ? { token } : {}),
    reconnect: false,
    requestTimeoutMs: 15_000,
  });
  try {
    await Promise.race([
      client.ready(),
      new Promise((_, reject) =>
        setTimeout(
          () => reject(new SessionsError("unavailable", `cannot reach the gateway at ${url}`)),
          5000,
        ).unref(),
      ),
    ]);
    return await fn(client);
  } finally {
    await client.close();
  }
}

function spinner(io: Out, label: string): () => void {
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

/** `sessions-gateway sessions <list|history|send|spawn|patch> …` */
export async function sessionsCommand(args: string[], options: ClientOptions, io: Out): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case "list":
      return withClient(options, async (client) => {
        const page = await client.sessions.list({
          limit: int(options.limit, "limit", 50),
          ...(options.agent ? { agentId: options.agent } : {}),
        });
        if (options.json) return io.out(JSON.stringify(page, null, 2));
        io.out(formatTable(page.sessions, ["key", "kind", "channel", "label", "updatedAt", "totalTokens"]));
        io.out(`${page.count} session(s)${page.hasMore ? " (more: --limit)" : ""}`);
      });
    case "history": {
      const key = rest[0] ?? usage("usage: sessions history <key> [--limit N]");
      return withClient(options, async (client) => {
        const history = await client.chat.history({
          sessionKey: key,
          limit: int(options.limit, "limit", 20),
        });
        if (options.json) return io.out(JSON.stringify(history, null, 2));
        const rows = history.messages.map((m) => ({
          seq: m.seq,
          role: m.role,
          text: typeof m.content === "string" ? m.content : JSON.stringify(m.content),
        }));
        io.out(formatTable(rows, ["seq", "role", "text"]));
      });
    }
    case "send": {
      const [key, ...words] = rest;
      if (key === undefined || words.length === 0)
        usage("usage: sessions send <key> <message…> [--wait] [--timeout s]");
      return withClient(options, async (client) => {
        const sent = await client.chat.send({
          sessionKey: key,
          message: words.join(" "),
          idempotencyKey: randomUUID(),
        });
        if (!options.wait)
          return io.out(options.json ? JSON.stringify(sent) : `${sent.status} ${sent.runId}`);
        const stop = spinner(io, `waiting for ${key}`);
        const timeout = int(options.timeout, "timeout", 120);
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
    case "spawn": {
      const [requesterKey, ...words] = rest;
      if (requesterKey === undefined || words.length === 0)
        usage("usage: sessions spawn <requesterKey> <task…> [--agent id] [--label text]");
      return withClient(options, async (client) => {
        const result = (await client.callTool({
          requesterKey,
          name: "sessions_spawn",
          params: {
            task: words.join(" "),
            ...(options.agent ? { agentId: options.agent } : {}),
            ...(options.label ? { label: options.label } : {}),
          },
        })) as { status: string; childSessionKey?: string; runId?: string; error?: string };
        if (options.json) return io.out(JSON.stringify(result));
        if (result.status !== "accepted") throw new SessionsError("forbidden", result.error ?? result.status);
        io.out(`accepted ${result.childSessionKey} (run ${result.runId})`);
      });
    }
    case "patch": {
      const key =
        rest[0] ??
        usage("usage: sessions patch <key> [--label text] [--send-policy allow|deny|inherit] [--model id]");
      const policy = options["send-policy"];
      if (policy !== undefined && !["allow", "deny", "inherit"].includes(policy)) {
        usage(`--send-policy must be allow, deny or inherit (got ${policy})`);
      }
      return withClient(options, async (client) => {
        const result = await client.sessions.patch({
          key,
          ...(options.label === undefined ? {} : { label: options.label }),
          ...(policy === undefined
            ? {}
            : { sendPolicy: policy === "inherit" ? null : (policy as "allow" | "deny") }),
          ...(options.model === undefined ? {} : { model: options.model }),
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
    default:
      usage("usage: sessions <list|history|send|spawn|patch> …");
  }
}
