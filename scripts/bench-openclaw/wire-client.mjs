// A plain `ws` client for both gateways (they speak the same protocol): the connect handshake, then p50s of
// `sessions.list` (limit 100), `chat.history` (limit 50) and connect + hello, each call waited for before the next.
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";

// `ws` as the gateway package has it (this script lives in the workspace, not in a package).
const WebSocket = createRequire(new URL("../../packages/gateway/package.json", import.meta.url))("ws");

/** Opens a socket and completes the handshake: `connect.challenge`, then `connect`, answered by `hello-ok`. */
export function connect(url, token) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: 64 * 1024 * 1024, perMessageDeflate: false });
    const pending = new Map();
    let hello;
    const call = (method, params = {}) =>
      new Promise((res, rej) => {
        const id = randomUUID();
        pending.set(id, { res, rej });
        ws.send(JSON.stringify({ type: "req", id, method, params }));
      });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error("connect timeout"));
    }, 30_000);
    ws.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    ws.on("close", (code) => {
      for (const p of pending.values()) p.rej(new Error(`closed ${code}`));
      if (hello === undefined) reject(new Error(`closed before hello-ok: ${code}`));
    });
    ws.on("message", (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type === "event" && frame.event === "connect.challenge") {
        const id = randomUUID();
        pending.set(id, {
          res: (payload) => {
            clearTimeout(timer);
            hello = payload;
            resolve({ ws, hello, call });
          },
          rej: reject,
        });
        ws.send(
          JSON.stringify({
            type: "req",
            id,
            method: "connect",
            params: {
              minProtocol: 4,
              maxProtocol: 4,
              // OpenClaw's device-less path: loopback, the shared token, client `gateway-client` in mode `backend`.
              client: { id: "gateway-client", version: "bench", platform: process.platform, mode: "backend" },
              role: "operator",
              scopes: ["operator.read", "operator.write", "operator.admin"],
              caps: [],
              auth: { token },
            },
          }),
        );
      } else if (frame.type === "res") {
        const p = pending.get(frame.id);
        if (p === undefined) return;
        pending.delete(frame.id);
        if (frame.ok) p.res(frame.payload);
        else p.rej(new Error(`${frame.error?.code}: ${frame.error?.message}`));
      }
    });
  });
}

export const p50 = (samples) => [...samples].sort((a, b) => a - b)[Math.floor((samples.length - 1) / 2)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The figures of one gateway, after `warmup` calls of each read (and a tenth as many connects) left untimed.
 * `connectBackToBack`: each connect right after the last closed; `connectPaced`: one connect every `paceMs` (the
 * client idles in between, as a bot that connects now and then).
 */
export async function measure(
  url,
  token,
  { key, calls = 200, connects = 100, warmup = 300, paceMs = 50, check = true },
) {
  const { ws, call } = await connect(url, token);
  const list = await call("sessions.list", { limit: 100 });
  const history = await call("chat.history", { sessionKey: key, limit: 50 });
  if (check && (list.sessions?.length !== 100 || history.messages?.length !== 50))
    throw new Error(`${url}: expected 100 sessions and 50 messages`);
  const timed = async (method, params) => {
    const samples = [];
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now();
      await call(method, params);
      samples.push(performance.now() - t0);
    }
    return p50(samples);
  };
  // A gateway runs for days: both are measured warm (their JIT has seen the calls), after the same warm-up.
  for (let i = 0; i < warmup; i++) {
    await call("sessions.list", { limit: 100 });
    await call("chat.history", { sessionKey: key, limit: 50 });
  }
  const figures = {
    list: await timed("sessions.list", { limit: 100 }),
    history: await timed("chat.history", { sessionKey: key, limit: 50 }),
  };
  ws.close();
  const connectOnce = async () => {
    const t0 = performance.now();
    const c = await connect(url, token);
    const ms = performance.now() - t0;
    c.ws.close();
    return ms;
  };
  for (let i = 0; i < warmup / 10; i++) await connectOnce();
  const backToBack = [];
  for (let i = 0; i < connects; i++) backToBack.push(await connectOnce());
  const paced = [];
  for (let i = 0; i < connects; i++) {
    await sleep(paceMs);
    paced.push(await connectOnce());
  }
  return { ...figures, connectPaced: p50(paced), connectBackToBack: p50(backToBack) };
}

/** The raw answer frames of one handshake and one call of each read, for the floor server to replay. */
export async function captureAnswers(url, token, key) {
  const { ws, call } = await connect(url, token);
  const raw = [];
  ws.on("message", (data) => raw.push(data.toString()));
  await call("sessions.list", { limit: 100 });
  await call("chat.history", { sessionKey: key, limit: 50 });
  ws.close();
  const again = await connect(url, token);
  again.ws.close();
  const hello = { type: "res", id: "0", ok: true, payload: again.hello };
  return { connect: JSON.stringify(hello), "sessions.list": raw[0], "chat.history": raw[1] };
}
