import type { ScriptedAgent } from "@sessions/gateway";

type Row = { key: string; kind: string; channel: string; label?: string };

/** The demo's agents are plain functions of their turn: deterministic, and they call real tools. */
export function demoAgents(
  note: (from: string, to: string, text: string) => void = () => {},
): Record<string, ScriptedAgent> {
  let researchChild: string | undefined;
  let mainPingPongs = 0;
  let opsPingPongs = 0;

  const main: ScriptedAgent = async (turn) => {
    if (turn.kind === "ping_pong") {
      mainPingPongs++;
      const reply =
        mainPingPongs === 1 ? "Thanks! Please post the schedule in #ops when it is locked." : "REPLY_SKIP";
      note("main", "ops", reply);
      return reply;
    }
    const text = turn.text.trim();
    if (text.startsWith("research ")) {
      const result = await turn.callTool<{ childSessionKey: string }>("sessions_spawn", {
        task: `Research: ${text.slice("research ".length)}`,
        agentId: "research",
        label: "research",
      });
      researchChild = result.childSessionKey;
      return "I asked a research sub-agent to look into it; it will report back here.";
    }
    if (text === "list sessions") {
      const list = await turn.callTool<{ count: number; sessions: Row[] }>("sessions_list", { limit: 20 });
      const lines = list.sessions.map(
        (s) => `• ${s.key} (${s.kind}, ${s.channel}${s.label ? `, "${s.label}"` : ""})`,
      );
      return `I can see ${list.count} sessions:\n${lines.join("\n")}`;
    }
    if (text === "what did research find?" && researchChild !== undefined) {
      const history = await turn.callTool<{ messages: { role: string; content: unknown }[] }>(
        "sessions_history",
        {
          sessionKey: researchChild,
          limit: 10,
        },
      );
      const last = [...history.messages].reverse().find((m) => m.role === "assistant");
      return `The research session has ${history.messages.length} messages. Its last answer:\n${String(last?.content ?? "(nothing yet)")}`;
    }
    if (text.startsWith("tell ")) {
      const [, room, ...rest] = text.split(" ");
      const sent = await turn.callTool<{ status: string; reply?: string; error?: string }>("sessions_send", {
        sessionKey: `agent:ops:console:group:${room}`,
        message: rest.join(" "),
        timeoutSeconds: 10,
      });
      return sent.status === "ok" ? `Ops replied: "${sent.reply}"` : `Could not reach ${room}: ${sent.error}`;
    }
    return `You said: ${text}`;
  };

  const research: ScriptedAgent = async (turn) => {
    if (turn.kind === "subagent") {
      turn.say("Reading sources…");
      await turn.sleep(150);
      return "Result:\nSession keys scope every conversation; visibility decides who sees what.\nNotes:\n- 3 sources read";
    }
    if (turn.kind === "subagent_announce") {
      return [
        "Result:",
        "- Every chat is a session with a stable key (agent:<id>:<channel>:group:<id>).",
        "- sessions_send carries provenance, so agents never mistake each other for users.",
        "- Sub-agents report back with a normalised Status/Result/Notes announce.",
        "Notes:",
        "- 3 sources read",
      ].join("\n");
    }
    return "REPLY_SKIP";
  };

  const ops: ScriptedAgent = (turn) => {
    if (turn.kind === "inter_session") return "Deploy of v2 is scheduled for 14:00 UTC.";
    if (turn.kind === "ping_pong") {
      opsPingPongs++;
      const reply = opsPingPongs === 1 ? "Will do — posting it in #ops now." : "REPLY_SKIP";
      note("ops", "main", reply);
      return reply;
    }
    if (turn.kind === "announce")
      return "📦 Deploy v2 scheduled for 14:00 UTC (requested by the main assistant).";
    return `Ops bot here. You said: ${turn.text}`;
  };

  return { main, research, ops };
}
