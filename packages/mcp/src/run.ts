import type { Readable, Writable } from "node:stream";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Logger } from "@sessions/core";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { createSessionsMcpServer, formatToolError } from "./server.js";

/** Options of `runSessionsMcp` (the CLI flags' counterparts). */
export interface RunSessionsMcpOptions {
  /** The gateway's WebSocket URL (`ws://127.0.0.1:18789`). */
  url: string;
  /** The gateway token (a token bound to `session` is the tightest choice). */
  token?: string | undefined;
  /** The requester session the tools act as (`main`, `agent:ops:discord:group:123`, …). */
  session: string;
  /** Sandboxed: the session sees at most its own tree. */
  sandboxed?: boolean | undefined;
  /** Server name reported to MCP clients (default `sessions`). */
  name?: string | undefined;
  /** Server version reported to MCP clients (default: this package's version). */
  version?: string | undefined;
  /** Tool calls wait this long for the gateway connection before failing (default 10,000 ms). */
  connectTimeoutMs?: number | undefined;
  /** Default `process.stdin`. */
  stdin?: Readable | undefined;
  /** Default `process.stdout`. Nothing but MCP JSON-RPC is ever written to it. */
  stdout?: Writable | undefined;
  /** Default: info, warnings and errors to stderr. */
  logger?: Logger | undefined;
}

/** A running stdio MCP server, from `runSessionsMcp`. */
export interface SessionsMcpHandle {
  readonly server: Server;
  readonly client: GatewayClient;
  /** Resolves once the server and the gateway client are closed (stdin ended, or `close()`). */
  readonly closed: Promise<void>;
  /** Closes the MCP server and the gateway client. */
  close(): Promise<void>;
}

/** One line per message on stderr (stdout belongs to the MCP protocol); debug only when `verbose`. */
export function stderrLogger(prefix = "sessions-mcp", verbose = false): Logger {
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    const extra =
      fields === undefined || Object.keys(fields).length === 0 ? "" : ` ${JSON.stringify(fields)}`;
    process.stderr.write(`${prefix}: ${level} ${message}${extra}\n`);
  };
  return {
    debug: (message, fields) => {
      if (verbose) write("debug", message, fields);
    },
    info: (message, fields) => write("info", message, fields),
    warn: (message, fields) => write("warn", message, fields),
    error: (message, fields) => write("error", message, fields),
    child: (name) => stderrLogger(`${prefix}:${name}`, verbose),
  };
}

/**
 * Runs the sessions MCP server over stdio: creates the gateway client, connects the server to a
 * `StdioServerTransport`, and closes both when stdin ends. The gateway connection is made in the background
 * (and kept up with reconnects), so the MCP handshake never waits for it.
 */
export async function runSessionsMcp(options: RunSessionsMcpOptions): Promise<SessionsMcpHandle> {
  const logger = options.logger ?? stderrLogger();
  let closing: Promise<void> | undefined;
  let markClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
  const client = createGatewayClient({
    url: options.url,
    ...(options.token === undefined ? {} : { token: options.token }),
    displayName: `sessions-mcp (${options.session})`,
    logger,
  });
  const server = createSessionsMcpServer({
    client,
    requesterKey: options.session,
    ...(options.sandboxed === true ? { sandboxed: true } : {}),
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.version === undefined ? {} : { version: options.version }),
    ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
  });
  client.ready().catch((error: unknown) => {
    // Only fatal failures reject (a refused token, a closed client); outages are retried in the background.
    if (!closing) logger.error(`cannot use the gateway at ${options.url}: ${formatToolError(error)}`);
  });
  // One warning per outage (not one per reconnect attempt), and a note when the connection is back.
  let outage = false;
  const offDisconnected = client.on("disconnected", (payload) => {
    if (closing !== undefined || outage) return;
    outage = true;
    const reason = (payload as { reason?: string | undefined; code?: number | undefined } | undefined) ?? {};
    logger.warn(
      `no connection to the gateway at ${options.url} (${reason.code ?? "?"}${reason.reason ? ` ${reason.reason}` : ""}); retrying`,
    );
    client.ready().then(
      () => {
        outage = false;
        if (closing === undefined) logger.info(`connected to the gateway at ${options.url} again`);
      },
      () => {},
    );
  });

  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const transport = new StdioServerTransport(stdin, stdout);

  const onEnd = () => void close();
  const onOutputError = (error: Error) => {
    logger.warn(`stdout failed: ${error.message}`);
    void close();
  };

  function close(): Promise<void> {
    if (closing !== undefined) return closing;
    let done: () => void = () => {};
    closing = new Promise<void>((resolve) => {
      done = resolve;
    });
    stdin.off("end", onEnd);
    stdin.off("close", onEnd);
    offDisconnected();
    void (async () => {
      try {
        await server.close();
      } catch (error) {
        logger.warn(`closing the MCP server failed: ${String(error)}`);
      }
      try {
        await client.close();
      } catch (error) {
        logger.warn(`closing the gateway client failed: ${String(error)}`);
      }
      stdout.off("error", onOutputError);
      done();
      markClosed();
    })();
    return closing;
  }

  // StdioServerTransport does not watch for the end of stdin: the client closing it is how stdio sessions end.
  stdin.once("end", onEnd);
  stdin.once("close", onEnd);
  stdout.on("error", onOutputError);
  server.onclose = onEnd;
  server.onerror = (error) => logger.warn(`MCP transport error: ${error.message}`);

  try {
    await server.connect(transport);
  } catch (error) {
    await close();
    throw error;
  }
  return { server, client, closed, close };
}
