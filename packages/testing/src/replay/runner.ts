import { IdAliases } from "./aliases.js";
import { idsIn, type MaskOptions, maskIds } from "./ids.js";
import { type RecordedTurn, readRecording } from "./recording.js";
import { type ReplayedRequest, recordedRequests } from "./requests.js";

/** A tool as the replay calls it: the part of a gateway's `RunnerTool` it needs. */
export interface ReplayTool {
  name: string;
  /** Runs the tool, as the gateway bound it to the run's session. */
  execute(params: unknown): Promise<unknown>;
}

/** What the replay emits: the text and tool events a gateway's runner reports. */
export type ReplayEvent =
  | { type: "text-delta"; text: string }
  | { type: "tool-call"; toolCallId: string; toolName: string; params: unknown }
  | { type: "tool-result"; toolCallId: string; toolName: string; result: unknown };

/** The part of a gateway's `AgentRunRequest` the replay reads. */
export interface ReplayRequest {
  /** The run's id: paired with the recorded turn's (its own recorded id when the replay sent it with that key). */
  runId?: string | undefined;
  agentId: string;
  sessionKey: string;
  kind: string;
  input: { content: unknown };
  system: string[];
  tools: readonly ReplayTool[];
  /** Reports progress to the gateway (its `chat` and `agent` events, the transcript's tool messages). */
  emit(event: ReplayEvent): void;
}

/** A runner (`AgentRunner` of `@sessions/gateway`) that plays a recording back, and what it found. */
export interface ReplayRunner {
  /** Answers one turn the gateway asks for from the recording (`AgentRunner.run`). */
  run(
    request: ReplayRequest,
  ): Promise<{ reply?: string | undefined; usage?: RecordedTurn["usage"] | undefined }>;
  /**
   * The requests that started the recorded exchange, in order, with the budget, trace context and delivery target
   * they were recorded with: send each again (`gateway.agent` / `gateway.chat.send`, `method` and `params`) to
   * replay it. Their idempotency keys are the recorded run ids, so each root is paired with its recorded run.
   */
  readonly requests: readonly ReplayedRequest[];
  /** Every way the live exchange left the recording so far, one readable entry each. */
  readonly divergences: readonly string[];
  /**
   * Throws a readable diff when the exchange diverged (a turn the recording does not have, another input, a tool
   * that answered differently) or left recorded turns unplayed; returns when it was the recording's, exactly.
   */
  assertReplayed(): void;
}

/** A turn's place for people: `#3 chat in agent:main:main`. */
const where = (turn: RecordedTurn, index: number) => `#${index + 1} ${turn.kind} in ${turn.sessionKey}`;

/**
 * A runner that plays back a recording made with `createGateway({ record })` / `sessions-gateway serve --record`:
 * each turn the gateway asks for is matched to the recorded turn of the same session and kind, in order; its input
 * and system context must be the recorded ones, its tool calls are made again (for real, against the gateway) and
 * must get the recorded answers, then the recorded text and reply come back. Ids and times are paired up, not
 * compared. A divergence fails the run with the diff and is kept for `assertReplayed`.
 */
export function createReplayRunner(
  source: string | { text: string },
  options: MaskOptions = {},
): ReplayRunner {
  const name = typeof source === "string" ? source : "the recording";
  const lines = readRecording(source);
  const turns = lines.filter((line) => line.type === "turn") as unknown as RecordedTurn[];
  const queues = new Map<string, number[]>();
  for (const [i, turn] of turns.entries()) {
    const key = `${turn.kind}|${turn.sessionKey}`;
    queues.set(key, [...(queues.get(key) ?? []), i]);
  }
  const played = new Set<number>();
  const aliases = new IdAliases(options.masks);
  const divergences: string[] = [];

  const diverge = (message: string): never => {
    divergences.push(message);
    throw new Error(`replay diverged from ${name}: ${message}`);
  };

  /**
   * The next recorded turn for a live request: its session's (ids paired) — the one of its run when its run id is
   * paired already (or is the recorded one), else the first — or a fresh sub-agent session's.
   */
  function next(request: ReplayRequest): number | undefined {
    const known = queues.get(`${request.kind}|${aliases.recorded(request.sessionKey)}`);
    if (known !== undefined && known.length > 0) {
      const runId = request.runId === undefined ? undefined : aliases.recorded(request.runId).toLowerCase();
      const at = known.findIndex((i) => turns[i]?.runId.toLowerCase() === runId);
      return known.splice(Math.max(at, 0), 1)[0];
    }
    if (idsIn(aliases.recorded(request.sessionKey)).length === 0) return undefined;
    // A session with a new id (a sub-agent's) before the answer that named it was compared: the earliest unplayed
    // session of the same shape whose id is not taken yet.
    const shape = maskIds(request.sessionKey);
    let best: { key: string; first: number } | undefined;
    for (const [key, queue] of queues) {
      const [kind, sessionKey] = key.split(/\|(.*)/s) as [string, string];
      const first = queue[0];
      if (kind !== request.kind || first === undefined || maskIds(sessionKey) !== shape) continue;
      if (idsIn(sessionKey).some((id) => aliases.has(id.toLowerCase()))) continue;
      if (best === undefined || first < best.first) best = { key, first };
    }
    if (best === undefined) return undefined;
    const recordedKey = best.key.split(/\|(.*)/s)[1] as string;
    aliases.compare(recordedKey, request.sessionKey);
    return queues.get(best.key)?.shift();
  }

  /** Pairs a turn's recorded run id with the live one when both are ids; one paired otherwise already differs. */
  function pairRun(recorded: string, live: string | undefined): string[] {
    if (live === undefined || idsIn(recorded).length !== 1 || idsIn(live).length !== 1) return [];
    return aliases.compare(recorded, live, "runId");
  }

  const requests = recordedRequests(lines);
  return {
    requests,
    get divergences() {
      return divergences;
    },
    async run(request) {
      const input = textOf(request.input.content);
      const index = next(request);
      if (index === undefined)
        return diverge(
          `a ${request.kind} turn in ${request.sessionKey} that the recording does not have: ${JSON.stringify(input)}`,
        );
      const turn = turns[index] as RecordedTurn;
      played.add(index);
      const asked = [
        ...pairRun(turn.runId, request.runId),
        ...aliases.compare(turn.input, input, "input"),
        ...aliases.compare(turn.system, request.system, "system"),
      ];
      if (asked.length > 0) diverge(`${where(turn, index)} was asked otherwise:\n  ${asked.join("\n  ")}`);
      for (const event of turn.events) {
        if ("text" in event) {
          request.emit({ type: "text-delta", text: aliases.live(event.text) });
          continue;
        }
        const { id, tool: toolName, params: recordedParams, result: recorded } = event.call;
        const tool = request.tools.find((t) => t.name === toolName);
        if (tool === undefined)
          diverge(`${where(turn, index)} called ${toolName}, which this run is not given`);
        const params = aliases.live(recordedParams);
        request.emit({ type: "tool-call", toolCallId: id, toolName, params });
        const result = await (tool as ReplayTool).execute(params);
        request.emit({ type: "tool-result", toolCallId: id, toolName, result });
        const answered = aliases.compare(recorded, result, toolName);
        if (answered.length > 0)
          diverge(`${where(turn, index)}: ${toolName} answered otherwise:\n  ${answered.join("\n  ")}`);
      }
      if (turn.error !== undefined) throw new Error(turn.error);
      return {
        ...(turn.reply === undefined ? {} : { reply: aliases.live(turn.reply) }),
        ...(turn.usage === undefined ? {} : { usage: turn.usage }),
      };
    },
    assertReplayed() {
      const unplayed = turns.flatMap((turn, i) =>
        played.has(i) ? [] : [`${where(turn, i)} never happened: ${JSON.stringify(turn.input)}`],
      );
      const all = [...divergences, ...unplayed];
      if (all.length > 0) throw new Error(`The replay of ${name} diverged:\n- ${all.join("\n- ")}`);
    },
  };
}

/** The text of a message's content: a string, or its text parts joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (part?.type === "text" && typeof part.text === "string" ? part.text : ""))
    .filter((t) => t !== "")
    .join("\n");
}
