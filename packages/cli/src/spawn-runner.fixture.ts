// A scripted runner for serve-budget.test.ts (`serve --runner`): every run spawns a sub-agent that does the same,
// so only the tree's budget stops it.
import { createScriptedRunner } from "@sessions/gateway";

export default createScriptedRunner({
  agents: {
    main: async (turn) => {
      if (turn.kind === "subagent_announce") return "ANNOUNCE_SKIP";
      const result = await turn.callTool<{ status: string; code?: string }>("sessions_spawn", {
        task: `go deeper than ${turn.sessionKey}`,
      });
      return `${result.status}${result.code ? ` (${result.code})` : ""}`;
    },
  },
});
