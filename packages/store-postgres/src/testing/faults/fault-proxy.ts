import { connect, createServer, type Server, type Socket } from "node:net";

/** Which way bytes flow: from the client to the target, back to the client, or both. */
export type FaultDirection = "both" | "toTarget" | "toClient";

/** What the proxy has seen: connections accepted (refused ones included), open now, refused, bytes forwarded. */
export interface FaultProxyStats {
  accepted: number;
  open: number;
  refused: number;
  bytesToTarget: number;
  bytesToClient: number;
}

/** A TCP proxy on 127.0.0.1 in front of one target, with faults to inject between the two. */
export interface FaultProxy {
  readonly port: number;
  /** `baseUrl` (e.g. a `postgres://` URL) with its host and port replaced by the proxy's. */
  url(baseUrl: string): string;
  /** Resets every open connection (the peers see ECONNRESET) and resets new ones at once, until `heal()`. */
  reset(): void;
  /** Stops forwarding `direction` (sources paused: TCP backpressure, nothing dropped); new connections too. */
  hold(direction?: FaultDirection): void;
  /** Every chunk forwarded `direction` waits at least `ms` (by `performance.now()`) after it arrived; 0: none. */
  delay(ms: number, direction?: FaultDirection): void;
  /** Passes everything again: held bytes flow in order, delays end, new connections are accepted. */
  heal(): void;
  stats(): FaultProxyStats;
  /** Stops listening and destroys every connection. */
  close(): Promise<void>;
}

/** Bytes a delayed direction may queue before its source is paused. */
const MAX_QUEUED = 1 << 20;

type Way = "toTarget" | "toClient";
const ways = (direction: FaultDirection): Way[] =>
  direction === "both" ? ["toTarget", "toClient"] : [direction];

/** Destroys `socket` so that its peer sees ECONNRESET, where this Node can (`resetAndDestroy`). */
const resetSocket = (socket: Socket) => {
  if (socket.destroyed) return;
  if (typeof socket.resetAndDestroy === "function" && !socket.connecting) socket.resetAndDestroy();
  else socket.destroy();
};

/** One direction of one connection: chunks queue until neither a hold, a delay nor backpressure stops them. */
interface Pipe {
  /** Forwards what may go now and pauses or resumes the source (call after any change of the faults). */
  pump(): void;
}

/** Starts a proxy on an ephemeral port of 127.0.0.1 forwarding to `target`. */
export async function startFaultProxy(options: {
  target: { host: string; port: number };
}): Promise<FaultProxy> {
  const held = { toTarget: false, toClient: false };
  const delayMs = { toTarget: 0, toClient: 0 };
  const counts = { accepted: 0, refused: 0, bytesToTarget: 0, bytesToClient: 0 };
  const connections = new Set<{ client: Socket; target: Socket; pipes: Pipe[] }>();
  let refusing = false;

  const pipe = (from: Socket, to: Socket, way: Way): Pipe => {
    const queue: { chunk: Buffer; at: number }[] = [];
    let queued = 0;
    let ended = false;
    let draining = false;
    let timer: NodeJS.Timeout | undefined;
    const pump = () => {
      clearTimeout(timer);
      timer = undefined;
      if (to.destroyed) return;
      while (queue.length > 0 && !held[way] && !draining) {
        const head = queue[0] as { chunk: Buffer; at: number };
        const wait = head.at + delayMs[way] - performance.now();
        if (wait > 0) {
          // A timer may fire a little early by the clock read here: the loop checks again.
          timer = setTimeout(pump, Math.ceil(wait));
          break;
        }
        queue.shift();
        queued -= head.chunk.length;
        counts[way === "toTarget" ? "bytesToTarget" : "bytesToClient"] += head.chunk.length;
        if (!to.write(head.chunk)) {
          draining = true;
          to.once("drain", () => {
            draining = false;
            pump();
          });
        }
      }
      if (queue.length === 0 && ended && !held[way] && !to.writableEnded) to.end();
      // Delayed chunks keep arriving (each waits from its own arrival) up to a bound; held ones stop the source.
      if (held[way] || draining || queued > MAX_QUEUED) from.pause();
      else if (!from.destroyed) from.resume();
    };
    from.on("data", (chunk: Buffer) => {
      queue.push({ chunk, at: performance.now() });
      queued += chunk.length;
      pump();
    });
    from.on("end", () => {
      ended = true;
      pump();
    });
    to.on("close", () => clearTimeout(timer));
    return { pump };
  };

  const server: Server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    counts.accepted++;
    if (refusing) {
      counts.refused++;
      client.on("error", () => undefined);
      resetSocket(client);
      return;
    }
    const target = connect({ ...options.target, allowHalfOpen: true });
    const connection = {
      client,
      target,
      pipes: [pipe(client, target, "toTarget"), pipe(target, client, "toClient")],
    };
    connections.add(connection);
    // A reset on one side is passed on as a reset; a close after both ends is the end of the connection.
    const onError = (other: Socket) => () => resetSocket(other);
    client.on("error", onError(target));
    target.on("error", onError(client));
    const onClose = () => {
      if (client.destroyed && target.destroyed) connections.delete(connection);
    };
    client.on("close", onClose);
    target.on("close", onClose);
    for (const each of connection.pipes) each.pump();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as { port: number };
  const pumpAll = () => {
    for (const connection of connections) for (const each of connection.pipes) each.pump();
  };

  return {
    port,
    url(baseUrl) {
      const parsed = new URL(baseUrl);
      parsed.hostname = "127.0.0.1";
      parsed.port = String(port);
      return parsed.toString();
    },
    reset() {
      refusing = true;
      for (const { client, target } of connections) {
        resetSocket(client);
        resetSocket(target);
      }
    },
    hold(direction = "both") {
      for (const way of ways(direction)) held[way] = true;
      pumpAll();
    },
    delay(ms, direction = "both") {
      for (const way of ways(direction)) delayMs[way] = ms;
      pumpAll();
    },
    heal() {
      refusing = false;
      held.toTarget = held.toClient = false;
      delayMs.toTarget = delayMs.toClient = 0;
      pumpAll();
    },
    stats: () => ({ ...counts, open: connections.size }),
    close() {
      refusing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const { client, target } of connections) {
        client.destroy();
        target.destroy();
      }
      return closed;
    },
  };
}
