import { connect, createServer, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterEach, describe, expect, inject, it } from "vitest";
import { eventually } from "../helpers.js";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.js";

const postgresUrl = inject("postgresUrl");
const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.resolve(step()).catch(() => undefined);
});

/**
 * How long a held reply is watched for and must not come. It proves an absence only (the presence after `heal()`
 * is waited for without a bound), so a slow machine cannot make it pass wrongly, only less telling.
 */
const ABSENT_MS = 300;
const pending = Symbol("pending");
const within = <T>(promise: Promise<T>, ms = ABSENT_MS) =>
  Promise.race([promise, new Promise<typeof pending>((resolve) => setTimeout(() => resolve(pending), ms))]);

async function proxyTo(port: number): Promise<FaultProxy> {
  const proxy = await startFaultProxy({ target: { host: "127.0.0.1", port } });
  cleanup.push(() => proxy.close());
  return proxy;
}

/** An echo server that also keeps what it received, to tell "reached the server" from "came back". */
async function startEcho(): Promise<{ port: number; received: () => string }> {
  let received = "";
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    socket.on("data", (chunk) => {
      received += String(chunk);
      socket.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as { port: number }).port, received: () => received };
}

/** A client socket to `port`, with what it has read so far and how it ended. */
async function dial(port: number) {
  const socket = connect({ host: "127.0.0.1", port });
  cleanup.push(() => socket.destroy());
  const state = { read: "", error: undefined as NodeJS.ErrnoException | undefined, closed: false };
  socket.on("data", (chunk) => {
    state.read += String(chunk);
  });
  socket.on("error", (error) => {
    state.error = error;
  });
  socket.on("close", () => {
    state.closed = true;
  });
  // A connection the proxy resets at once may fail its connect (`connect ECONNRESET`): either ends the wait.
  await new Promise<void>((resolve) => {
    socket.once("connect", resolve);
    socket.once("close", resolve);
  });
  return { socket, state };
}

/** A pg client through `url`; errors after connecting are kept, not thrown (a reset emits one). */
async function pgClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  cleanup.push(() => client.end());
  await client.connect();
  return client;
}

describe("fault proxy, on a TCP echo server", () => {
  it("passes bytes both ways and counts them", async () => {
    const echo = await startEcho();
    const proxy = await proxyTo(echo.port);
    const { socket, state } = await dial(proxy.port);
    socket.write("hello");
    await eventually(() => state.read === "hello", "the echo");
    expect(proxy.stats()).toMatchObject({
      accepted: 1,
      open: 1,
      refused: 0,
      bytesToTarget: 5,
      bytesToClient: 5,
    });
    socket.end();
    await eventually(() => proxy.stats().open === 0, "the connection closed on both sides");
  });

  it("reset: the client sees ECONNRESET, new connections are reset until heal", async () => {
    const echo = await startEcho();
    const proxy = await proxyTo(echo.port);
    const first = await dial(proxy.port);
    first.socket.write("a");
    await eventually(() => first.state.read === "a");
    proxy.reset();
    await eventually(() => first.state.closed, "the first connection closed");
    expect(first.state.error?.code).toBe("ECONNRESET");

    const refused = await dial(proxy.port);
    await eventually(() => refused.state.closed, "the new connection closed");
    expect(refused.state.error?.code).toBe("ECONNRESET");
    expect(proxy.stats().refused).toBe(1);

    proxy.heal();
    const healed = await dial(proxy.port);
    healed.socket.write("b");
    await eventually(() => healed.state.read === "b", "the echo after heal");
  });

  it("hold toClient: bytes reach the server, replies wait for heal", async () => {
    const echo = await startEcho();
    const proxy = await proxyTo(echo.port);
    const { socket, state } = await dial(proxy.port);
    proxy.hold("toClient");
    socket.write("ping");
    await eventually(() => echo.received() === "ping", "the bytes at the server");
    await new Promise((resolve) => setTimeout(resolve, ABSENT_MS));
    expect(state.read).toBe("");
    proxy.heal();
    await eventually(() => state.read === "ping", "the held reply");
  });

  it("hold toTarget: nothing reaches the server until heal, then everything in order", async () => {
    const echo = await startEcho();
    const proxy = await proxyTo(echo.port);
    proxy.hold("toTarget");
    // A connection made while held is held too.
    const { socket, state } = await dial(proxy.port);
    for (let i = 0; i < 50; i++) socket.write(`${i},`);
    await new Promise((resolve) => setTimeout(resolve, ABSENT_MS));
    expect(echo.received()).toBe("");
    expect(proxy.stats().bytesToTarget).toBe(0);
    proxy.heal();
    const all = Array.from({ length: 50 }, (_, i) => `${i},`).join("");
    await eventually(() => state.read === all, "every held byte, in order");
    expect(echo.received()).toBe(all);
  });

  it("hold builds TCP backpressure (the writer's own buffer fills) instead of buffering without end", async () => {
    const echo = await startEcho();
    const proxy = await proxyTo(echo.port);
    proxy.hold("toTarget");
    const { socket } = await dial(proxy.port);
    // 16 MiB in 64 KiB writes; the kernel's buffers on both sockets take a few MiB (3.7 seen here), no more.
    const chunk = Buffer.alloc(64 * 1024, 120);
    const total = 256 * chunk.length;
    let flushed = 0;
    for (let i = 0; i < 256; i++) socket.write(chunk, () => (flushed += chunk.length));
    await new Promise((resolve) => setTimeout(resolve, ABSENT_MS));
    expect(flushed).toBeLessThan(total / 2);
    expect(proxy.stats().bytesToTarget).toBe(0);
    proxy.heal();
    await eventually(() => echo.received().length === total, "every byte at the server after heal");
  });

  it("delay: each chunk is forwarded no sooner than the delay after it arrived", async () => {
    const echo = await startEcho();
    const proxy = await proxyTo(echo.port);
    const { socket, state } = await dial(proxy.port);
    proxy.delay(100, "toTarget");
    const started = performance.now();
    socket.write("x");
    await eventually(() => state.read === "x");
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
  });

  it("close destroys open connections and stops listening", async () => {
    const echo = await startEcho();
    const proxy = await proxyTo(echo.port);
    const { state } = await dial(proxy.port);
    await proxy.close();
    await eventually(() => state.closed, "the open connection closed");
    expect(proxy.stats().open).toBe(0);
    const after = await dial(proxy.port);
    expect(after.state.error?.code).toBe("ECONNREFUSED");
  });
});

describe("fault proxy, in front of Postgres", () => {
  const target = new URL(postgresUrl);
  const proxied = async () => {
    const proxy = await proxyTo(Number(target.port));
    return { proxy, url: proxy.url(postgresUrl) };
  };

  it("reset fails an in-flight query with a connection error and refuses new clients until heal", async () => {
    const { proxy, url } = await proxied();
    const client = await pgClient(url);
    const observer = await pgClient(postgresUrl);
    const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
    const query = client.query("SELECT pg_sleep(3)").then(
      () => undefined,
      (error: Error & { code?: string }) => error,
    );
    await eventually(async () => {
      const { rows } = await observer.query(
        "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'",
        [pid],
      );
      return rows.length === 1;
    }, "the query under way");
    proxy.reset();
    const error = await query;
    expect(error).toBeInstanceOf(Error);
    expect(error?.code ?? error?.message).toMatch(/ECONNRESET|terminated/);

    const refused = new pg.Client({ connectionString: url });
    refused.on("error", () => undefined);
    await expect(refused.connect()).rejects.toThrow(/ECONNRESET|terminated/);
    await refused.end().catch(() => undefined);

    proxy.heal();
    const healed = await pgClient(url);
    expect((await healed.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  });

  it("hold keeps a query's answer until heal, then it completes", async () => {
    const { proxy, url } = await proxied();
    const client = await pgClient(url);
    proxy.hold();
    const query = client.query<{ one: number }>("SELECT 1 AS one");
    expect(await within(query)).toBe(pending);
    proxy.heal();
    expect((await query).rows).toEqual([{ one: 1 }]);
  });

  it("hold toClient: the statement runs on the server, its answer waits for heal", async () => {
    const { proxy, url } = await proxied();
    const client = await pgClient(url);
    const observer = await pgClient(postgresUrl);
    const table = `fault_proxy_${process.pid}`;
    await observer.query(`CREATE TABLE IF NOT EXISTS ${table} (n int)`);
    cleanup.push(() => observer.query(`DROP TABLE IF EXISTS ${table}`));
    proxy.hold("toClient");
    const insert = client.query(`INSERT INTO ${table} VALUES (1)`);
    await eventually(
      async () => (await observer.query(`SELECT n FROM ${table}`)).rows.length === 1,
      "the row written through the half-held connection",
    );
    expect(await within(insert)).toBe(pending);
    proxy.heal();
    expect((await insert).rowCount).toBe(1);
  });

  it("a client connecting while held waits, and connects after heal", async () => {
    const { proxy, url } = await proxied();
    proxy.hold();
    const client = new pg.Client({ connectionString: url });
    client.on("error", () => undefined);
    cleanup.push(() => client.end());
    const connected = client.connect();
    expect(await within(connected)).toBe(pending);
    proxy.heal();
    await connected;
    expect((await client.query("SELECT 2 AS two")).rows).toEqual([{ two: 2 }]);
  });

  it("delay adds at least its time to each direction of a round trip", async () => {
    const { proxy, url } = await proxied();
    const client = await pgClient(url);
    proxy.delay(100);
    const started = performance.now();
    await client.query("SELECT 1");
    // Both ways delayed: at least twice the delay.
    expect(performance.now() - started).toBeGreaterThanOrEqual(200);
    proxy.heal();
    proxy.delay(150, "toClient");
    const again = performance.now();
    await client.query("SELECT 1");
    expect(performance.now() - again).toBeGreaterThanOrEqual(150);
  });
});
