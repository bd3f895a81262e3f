// A scripted runner for serve-guards.test.ts (`serve --runner`): three rooms pass every message on, #a → #b → #c →
// #a, until the gateway's hop limit stops the chain.
import { createScriptedRunner } from "@sessions/gateway";

const room = (name: string) => `agent:main:chat:group:${name}`;
const NEXT: Record<string, string> = {
  [room("a")]: room("b"),
  [room("b")]: room("c"),
  [room("c")]: room("a"),
};

export default createScriptedRunner({
  agents: {
    main: async (turn) => {
      if (turn.kind === "ping_pong") return "REPLY_SKIP";
      if (turn.kind === "announce") return "ANNOUNCE_SKIP";
      const next = NEXT[turn.sessionKey];
      if (next === undefined || (turn.kind !== "inter_session" && turn.text !== "start")) return "ok";
      const result = await turn.callTool<{ status: string; code?: string }>("sessions_send", {
        sessionKey: next,
        message: `passed on by ${turn.sessionKey}`,
        timeoutSeconds: 0,
      });
      return `${result.status}${result.code ? ` (${result.code})` : ""}`;
    },
  },
});
