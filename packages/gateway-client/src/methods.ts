import { normalizeHistoryMessage } from "@sessions/core";
import type { Call, GatewayClient } from "./client-types.js";
import type { Subscriptions } from "./subscriptions.js";

type WireMethods = Pick<
  GatewayClient,
  "sessions" | "chat" | "agent" | "agentWait" | "agents" | "runs" | "deliveries" | "callTool"
>;

/** The typed wrappers of the wire methods; subscriptions are recorded so a reconnect can restore them. */
export function wireMethods(request: Call, subscriptions: Subscriptions): WireMethods {
  return {
    sessions: {
      list: (params, opts) => request("sessions.list", params ?? {}, opts),
      search: (params, opts) => request("sessions.search", params, opts),
      resolve: (params, opts) => request("sessions.resolve", params, opts),
      patch: (params, opts) => request("sessions.patch", params, opts),
      delete: (params, opts) => request("sessions.delete", params, opts),
      async subscribe(params = {}, opts) {
        const payload = await request("sessions.subscribe", params, opts);
        subscriptions.subscribed(params, payload);
        return payload;
      },
      async unsubscribe(params = {}, opts) {
        subscriptions.unsubscribed(params);
        const payload = await request("sessions.unsubscribe", params, opts);
        subscriptions.unsubscribed(params, payload);
        return payload;
      },
    },
    chat: {
      // An OpenClaw gateway's messages carry `timestamp` and `__openclaw.seq`: `ts` and `seq` are filled from them.
      async history(params, opts) {
        const page = await request("chat.history", params, opts);
        return Array.isArray(page?.messages)
          ? { ...page, messages: page.messages.map(normalizeHistoryMessage) }
          : page;
      },
      send: (params, opts) => request("chat.send", params, opts),
      abort: (params, opts) => request("chat.abort", params, opts),
    },
    agent: (params, opts) => request("agent", params, opts),
    agentWait: (params, opts) =>
      request("agent.wait", params, { timeoutMs: (params.timeoutMs ?? 30_000) + 10_000, ...opts }),
    agents: { list: (opts) => request("agents.list", {}, opts) },
    runs: {
      list: (params, opts) => request("runs.list", params ?? {}, opts),
      tree: (params, opts) => request("runs.tree", params, opts),
    },
    deliveries: {
      get: (params, opts) => request("deliveries.get", params, opts),
      list: (params, opts) => request("deliveries.list", params ?? {}, opts),
    },
    callTool: (params, opts) => request("sessions.tools.call", params, { timeoutMs: 15 * 60_000, ...opts }),
  };
}
