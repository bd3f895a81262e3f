/**
 * One gateway process on a shared Postgres, for the failover test and the local cluster: the real
 * `createGateway` + `createPostgresStore`, a scripted runner (`slow:<ms> …` sleeps that long), and a chat adapter
 * whose platform is an HTTP server given by `PLATFORM_URL` (the outside world). Prints `listening <ws url>`.
 *
 * Env: DATABASE_URL, SCHEMA, NAME, PLATFORM_URL (optional), PORT (default 0), LEASE_TTL_MS, RECOVERY_MS.
 */

import type { Logger } from "@sessions/core";
import type { ChannelAdapterV1 } from "@sessions/gateway";
import { createGateway, messageText } from "@sessions/gateway";
import { createPostgresStore } from "../store.js";

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const name = env("NAME");
const platform = process.env.PLATFORM_URL;

async function post(path: string, body: unknown): Promise<unknown> {
  if (platform === undefined) return {};
  const response = await fetch(`${platform}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`platform answered ${response.status}`);
  return response.json();
}

const adapter: ChannelAdapterV1 = {
  specVersion: 1,
  channel: "chat",
  capabilities: {},
  async deliver(target, message, options) {
    if (platform === undefined) {
      process.stdout.write(`deliver ${target.to}: ${message.text}\n`);
      return { messageIds: [options.idempotencyKey] };
    }
    const answer = (await post("/send", {
      gateway: name,
      key: options.idempotencyKey,
      to: target.to,
      text: message.text,
    })) as { messageIds: string[] };
    return { messageIds: answer.messageIds };
  },
};

/** Warnings and errors to stderr, one line each (the cluster script shows them; tests keep them for failures). */
function stderrLogger(prefix: string): Logger {
  const line = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    process.stderr.write(
      `${name} ${level} ${prefix}${message}${fields ? ` ${JSON.stringify(fields)}` : ""}\n`,
    );
  return {
    debug: () => {},
    info: process.env.VERBOSE ? line("info") : () => {},
    warn: line("warn"),
    error: line("error"),
    child: (child) => stderrLogger(`${prefix}${child}: `),
  };
}
const logger = stderrLogger("");

const store = await createPostgresStore({
  connectionString: env("DATABASE_URL"),
  schema: env("SCHEMA"),
  logger,
});
const gateway = createGateway({
  store,
  logger,
  adapters: [adapter],
  runner: {
    async run(request) {
      const text = messageText(request.input);
      const slow = /^slow:(\d+)\s/.exec(text);
      if (slow) await new Promise((resolve) => setTimeout(resolve, Number(slow[1])));
      return { reply: `${name}: ${text}` };
    },
  },
  cluster: {
    leaseTtlMs: Number(env("LEASE_TTL_MS", "2000")),
    recoveryIntervalMs: Number(env("RECOVERY_MS", "250")),
  },
});
await gateway.ready;
gateway.holdConnection("bot", {
  start: async () => {
    await post("/connection", { gateway: name, event: "start" });
    process.stdout.write(`${name} holds the bot connection\n`);
  },
  stop: async () => {
    await post("/connection", { gateway: name, event: "stop" }).catch(() => undefined);
  },
});
const server = await gateway.listen({ host: "127.0.0.1", port: Number(env("PORT", "0")) });
process.stdout.write(`listening ${server.url}\n`);
const stop = () => {
  void gateway.close({ drainMs: 1000 }).then(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
