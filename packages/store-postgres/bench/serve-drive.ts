/**
 * The wire side of serve.bench.ts: `@sessions/gateway-client` connections to the `sessions-gateway serve`
 * processes, and the two shapes of load. A run is `chat.send` (a user message to a session; its run id is the
 * idempotency key) then `agent.wait` on that run id, on the connection that sent it. Sends go round-robin over the
 * gateways (and over each gateway's connections), so every session's runs are spread over every gateway, as behind a
 * load balancer without sticky sessions. A call the gateway refuses as retryable (a Postgres deadlock, say) is
 * made again after the `retryAfterMs` it asks for, as a client should; the retries are counted, and reported.
 */
import { createGatewayClient, type GatewayClient, GatewayClientError } from "@sessions/gateway-client";

/** Connections per gateway: a gateway refuses more than 4,096 requests in flight on one connection. */
const CONNECTIONS_PER_GATEWAY = 4;
/** Long enough for the last run of a 4,000-run backlog on a busy 2-core machine. */
const WAIT_MS = 300_000;

export interface WireDriver {
  /** Calls made again after a retryable refusal, by the error's message. */
  readonly retries: Map<string, number>;
  /** `chat.send` on the next connection in turn; resolves with the connection and the run id. */
  send(sessionKey: string, key: string): Promise<{ client: GatewayClient; runId: string }>;
  /** `agent.wait` on `client` until the run ended; throws unless it ended ok. */
  wait(client: GatewayClient, runId: string): Promise<void>;
  close(): Promise<void>;
}

export async function connectDriver(urls: readonly string[]): Promise<WireDriver> {
  const clients: GatewayClient[] = [];
  try {
    // Interleaved (gateway 0, 1, 2, 0, 1, 2, …): taking them in turn alternates the gateways.
    for (let c = 0; c < CONNECTIONS_PER_GATEWAY; c++) {
      for (const url of urls) {
        const client = createGatewayClient({ url, reconnect: false, requestTimeoutMs: WAIT_MS });
        clients.push(client);
        await client.ready();
      }
    }
  } catch (error) {
    await Promise.all(clients.map((client) => client.close()));
    throw error;
  }
  let turn = 0;
  const retries = new Map<string, number>();
  // Both calls are safe to repeat: chat.send answers a repeated idempotency key with the run it made.
  const retried = async <T>(call: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await call();
      } catch (error) {
        if (!(error instanceof GatewayClientError) || !error.retryable) throw error;
        const reason = error.message.replace(/\(schema \S+\) /, "");
        retries.set(reason, (retries.get(reason) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, error.retryAfterMs ?? 100));
      }
    }
  };
  return {
    retries,
    async send(sessionKey, key) {
      const client = clients[turn++ % clients.length] as GatewayClient;
      const { runId } = await retried(() =>
        client.chat.send({ sessionKey, message: key, idempotencyKey: key }),
      );
      return { client, runId };
    },
    async wait(client, runId) {
      const done = await retried(() => client.agentWait({ runId, timeoutMs: WAIT_MS }));
      if (done.status !== "ok") throw new Error(`run ${runId} ended ${done.status}: ${done.error ?? ""}`);
    },
    async close() {
      await Promise.all(clients.map((client) => client.close()));
    },
  };
}

/** What the two shapes take: `sessions` sessions (`<sessionPrefix>-<n>`), `runs` runs keyed `<keyPrefix>-<n>`. */
export interface LoadSpec {
  sessions: number;
  runs: number;
  sessionPrefix: string;
  /** Idempotency keys (and so run ids) must not repeat: a warm-up and the load take different ones. */
  keyPrefix: string;
}

/**
 * Serial: one producer per session, each sending its session's next run once the last one ended, until `runs`
 * ran. The first `sessions` runs create the sessions (a warm-up is this shape with runs >= sessions).
 */
export async function driveSerial(driver: WireDriver, spec: LoadSpec): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(spec.sessions, spec.runs) }, async (_, s) => {
      for (let i = next++; i < spec.runs; i = next++) {
        const { client, runId } = await driver.send(`${spec.sessionPrefix}-${s}`, `${spec.keyPrefix}-${i}`);
        await driver.wait(client, runId);
      }
    }),
  );
}

/**
 * Backlog: every run sent at once (run n to session n % sessions, so runs / sessions queue in each session), then
 * every one waited for.
 */
export async function driveBacklog(driver: WireDriver, spec: LoadSpec): Promise<void> {
  const sent = await Promise.all(
    Array.from({ length: spec.runs }, (_, i) =>
      driver.send(`${spec.sessionPrefix}-${i % spec.sessions}`, `${spec.keyPrefix}-${i}`),
    ),
  );
  await Promise.all(sent.map(({ client, runId }) => driver.wait(client, runId)));
}
