// A scripted runner for serve-tracing.test.ts (`serve --runner`): the main session's "go" sends to #ops and spawns
// a sub-agent; #ops's reply-back turn waits for the file `$TREE_RUNNER_GATE` to exist (so a test can restart the
// gateway in the middle of the loop).
import { existsSync } from "node:fs";
import { createScriptedRunner } from "@sessions/gateway";

const OPS = "agent:main:chat:group:ops";
const gate = process.env.TREE_RUNNER_GATE ?? "";

export default createScriptedRunner({
  agents: {
    main: async (turn) => {
      if (turn.kind === "ping_pong") {
        if (turn.sessionKey !== OPS) return "main, turn 1";
        while (!existsSync(gate)) await turn.sleep(20);
        return "ops, turn 2";
      }
      if (turn.kind === "announce") return "Deploy approved";
      if (turn.kind === "subagent") return "Result: three papers";
      if (turn.kind === "subagent_announce") return "Result: three papers";
      if (turn.sessionKey === OPS) return "round one";
      if (turn.text !== "go") return "hello";
      await turn.callTool("sessions_send", { sessionKey: OPS, message: "deploy?", timeoutSeconds: 0 });
      await turn.callTool("sessions_spawn", { task: "research" });
      return "on it";
    },
  },
});
