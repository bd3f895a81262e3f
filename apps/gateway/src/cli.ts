import { parseArgs } from "node:util";
import { SessionsError } from "@sessions/core";
import { sessionsCommand } from "./commands.js";
import { serve } from "./serve.js";

const HELP = `sessions-gateway — run and operate a sessions gateway

  sessions-gateway serve [--config file.json5] [--port 18789] [--host 127.0.0.1] [--db path] [--runner echo|module]
  sessions-gateway sessions list [--limit N] [--agent id]
  sessions-gateway sessions history <key> [--limit N]
  sessions-gateway sessions send <key> <message…> [--wait] [--timeout seconds]
  sessions-gateway sessions spawn <requesterKey> <task…> [--agent id] [--label text]
  sessions-gateway sessions patch <key> [--label text] [--send-policy allow|deny|inherit] [--model id]

  Client commands take --url (default $SESSIONS_GATEWAY_URL or ws://127.0.0.1:18789) and --json.
  The token comes from $SESSIONS_GATEWAY_TOKEN.`;

const io = {
  out: (line: string) => process.stdout.write(`${line}\n`),
  err: (text: string) => process.stderr.write(text),
  tty: process.stderr.isTTY === true,
};

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      config: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      db: { type: "string" },
      runner: { type: "string" },
      "drain-ms": { type: "string" },
      url: { type: "string" },
      json: { type: "boolean" },
      limit: { type: "string" },
      agent: { type: "string" },
      label: { type: "string" },
      "send-policy": { type: "string" },
      model: { type: "string" },
      wait: { type: "boolean" },
      timeout: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    io.out(HELP);
    return command === undefined && !values.help ? 2 : 0;
  }
  if (command === "serve") {
    await serve(
      {
        ...(values.config === undefined ? {} : { config: values.config }),
        ...(values.port === undefined ? {} : { port: values.port }),
        ...(values.host === undefined ? {} : { host: values.host }),
        ...(values.db === undefined ? {} : { db: values.db }),
        ...(values.runner === undefined ? {} : { runner: values.runner }),
        ...(values["drain-ms"] === undefined ? {} : { drainMs: values["drain-ms"] }),
      },
      io.out,
    );
    return 0;
  }
  if (command === "sessions") {
    await sessionsCommand(rest, values, io);
    return 0;
  }
  throw new SessionsError("invalid_params", `unknown command "${command}" (try --help)`);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    const field =
      SessionsError.isInstance(error) && error.field && !message.includes(error.field)
        ? ` (${error.field})`
        : "";
    process.stderr.write(`sessions-gateway: ${message}${field}\n`);
    process.exitCode = SessionsError.isInstance(error) && error.code === "invalid_params" ? 2 : 1;
  },
);
