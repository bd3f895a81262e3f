import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { silentLogger } from "@sessions/core";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { eventually } from "../test-kit.js";
import { type Connection, createFrameWriter, newConnection } from "./connection.js";

/** A real loopback WebSocket pair: the server side as the gateway holds it (with its socket), the client's frames. */
async function pair(): Promise<{
  conn: Connection;
  socket: Duplex;
  received: string[];
  close(): Promise<void>;
}> {
  const wss = new WebSocketServer({ noServer: true });
  const http: Server = createServer();
  const accepted = new Promise<{ conn: Connection; socket: Duplex }>((resolve) => {
    http.on("upgrade", (req, socket, head) =>
      wss.handleUpgrade(req, socket, head, (ws) => resolve({ conn: newConnection(ws, socket), socket })),
    );
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(http.address() as AddressInfo).port}`);
  const received: string[] = [];
  client.on("message", (data) => received.push(String(data)));
  const { conn, socket } = await accepted;
  await new Promise((resolve) =>
    client.readyState === WebSocket.OPEN ? resolve(undefined) : client.once("open", resolve),
  );
  return {
    conn,
    socket,
    received,
    async close() {
      client.terminate();
      conn.ws.terminate();
      wss.close();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** The writer with the server's default limits. */
const writer = () =>
  createFrameWriter({ logger: silentLogger, maxBufferedBytes: 8 * 1024 * 1024, maxResponseBytes: 1 << 24 });
const seqOf = (frame: string) => (JSON.parse(frame) as { seq: number }).seq;

describe("the frame writer", () => {
  let open: Awaited<ReturnType<typeof pair>> | undefined;
  afterEach(async () => {
    await open?.close();
    open = undefined;
  });

  it("holds a turn's frames in one cork and sends them all, in order, when the turn ends", async () => {
    open = await pair();
    const { conn, socket, received } = open;
    const out = writer();
    for (let i = 0; i < 200; i++) out.event(conn, "tick", { i });
    // Nothing has been written yet: the frames wait in the socket's cork until the turn ends.
    expect(socket.writableCorked).toBe(1);
    expect(socket.writableLength).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(socket.writableCorked).toBe(0);
    await eventually(() => expect(received).toHaveLength(200));
    expect(received.map(seqOf)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it("never holds more than a cork's worth: a large frame and what came before it leave at once, order kept", async () => {
    open = await pair();
    const { conn, socket, received } = open;
    const out = writer();
    out.event(conn, "small", { i: 1 });
    out.event(conn, "large", { text: "x".repeat(200 * 1024) });
    // The large frame flushed the small one and was not corked itself.
    expect(socket.writableCorked).toBe(0);
    out.event(conn, "small", { i: 3 });
    expect(socket.writableCorked).toBe(1);
    // Many small frames: the cork is written out whenever it would pass 64 KiB, so it never holds much more.
    for (let i = 0; i < 500; i++) {
      out.event(conn, "small", { text: "y".repeat(1000) });
      expect(socket.writableLength).toBeLessThan(200 * 1024 + 80 * 1024);
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(socket.writableCorked).toBe(0);
    await eventually(() => expect(received).toHaveLength(503));
    expect(received.map(seqOf)).toEqual(Array.from({ length: 503 }, (_, i) => i + 1));
    expect(JSON.parse(received[1] as string)).toMatchObject({ event: "large" });
  });
});
