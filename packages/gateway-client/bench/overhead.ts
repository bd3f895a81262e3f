// 1. Per-call overhead of the wire: agents.list and sessions.list limit 1, in process against over the client,
// with a bare `ws` echo of the same frame sizes as the transport floor.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import type { Gateway } from "@sessions/gateway";
import { WebSocket, WebSocketServer } from "ws";
import type { GatewayClient } from "../src/index.js";
import {
  check,
  LATENCY,
  latencyRow,
  measure,
  ms,
  note,
  rows,
  type Stats,
  since,
  TARGET,
  verdict,
} from "./harness.js";

/** Transport floor: a bare `ws` server echoing a frame of the same size, no protocol, JSON or validation. */
async function echoServer(response: string) {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(wss, "listening");
  wss.on("connection", (socket) => socket.on("message", () => socket.send(response)));
  const ws = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  await once(ws, "open");
  let answered: (() => void) | undefined;
  ws.on("message", () => answered?.());
  return {
    roundTrip: (request: string) =>
      new Promise<void>((resolve) => {
        answered = resolve;
        ws.send(request);
      }),
    async close() {
      ws.close();
      await once(ws, "close");
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export async function overheadBench(gateway: Gateway, client: GatewayClient): Promise<void> {
  const local = await gateway.call("agents.list", {});
  const remote = await client.agents.list();
  check(
    JSON.stringify(local) === JSON.stringify(remote),
    "agents.list is the same in process and over the wire",
  );
  const listLocal = await gateway.sessions.list({ limit: 1 });
  const listRemote = await client.sessions.list({ limit: 1 });
  check(listLocal.count === 1 && listRemote.count === 1, "sessions.list limit 1 returns one row");

  const request = JSON.stringify({ type: "req", id: "1000", method: "agents.list", params: {} });
  const response = JSON.stringify({ type: "res", id: "1000", ok: true, payload: remote });
  const echo = await echoServer(response);
  const t = performance.now();
  const [inProcess, wire, bare, listIn, listWire] = (await measure(
    [
      () => gateway.call("agents.list", {}),
      () => client.agents.list(),
      () => echo.roundTrip(request),
      () => gateway.sessions.list({ limit: 1 }),
      () => client.sessions.list({ limit: 1 }),
    ],
    LATENCY,
  )) as [Stats, Stats, Stats, Stats, Stats];
  await echo.close();
  note(
    `timed ${LATENCY.iterations} rounds in ${since(t)}; agents.list frames: request ${request.length} B, response ${response.length} B`,
  );

  const added = wire.p50 - inProcess.p50;
  latencyRow("agents.list in process (gateway.call)", inProcess);
  latencyRow("agents.list over the wire (client.agents.list)", wire);
  rows.push({
    task: "  added by the wire (p50 wire − p50 in process)",
    p50: ms(added),
    "p95 / total": ms(wire.p95 - inProcess.p95),
    target: `≤ ${TARGET.addedP50Ms} ms`,
    verdict: verdict(added <= TARGET.addedP50Ms),
  });
  latencyRow("  baseline: bare ws echo round trip (same frame sizes)", bare);
  latencyRow("sessions.list limit 1 in process (5 sessions)", listIn);
  latencyRow("sessions.list limit 1 over the wire (5 sessions)", listWire);
  rows.push({
    task: "  added by the wire",
    p50: ms(listWire.p50 - listIn.p50),
    "p95 / total": ms(listWire.p95 - listIn.p95),
    target: "",
    verdict: "",
  });
}
