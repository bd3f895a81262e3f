import type { TranscriptMessage } from "@sessions/core";
import {
  jsonSchema,
  type LanguageModel,
  type ModelMessage,
  stepCountIs,
  streamText,
  type ToolSet,
  tool,
} from "ai";
import type { RunUsage } from "../store/types.js";
import { messageText } from "../transcript.js";
import type { AgentRunner, AgentRunRequest, AgentRunResult } from "./types.js";

/** Options of `createAiSdkRunner`. */
export interface AiSdkRunnerOptions {
  /** The model, or one per agent id / model override (e.g. from `@ai-sdk/openai`). */
  model: LanguageModel | ((request: { agentId: string; model?: string | undefined }) => LanguageModel);
  /** A system prompt per agent (prepended to the gateway's system context). */
  system?: string | ((agentId: string) => string | undefined) | undefined;
  /** Model ids accepted for `sessions_spawn({ model })`. */
  models?: readonly string[] | undefined;
  /** Upper bound on model/tool steps per run (default 8). */
  maxSteps?: number | undefined;
}

/** What the model is given for a user's message without text (an attachment, say), rather than nothing. */
const NO_TEXT = "(the message had no text)";

/**
 * Transcript messages as model messages: users' and the assistant's text. A message without text is left out, or
 * with `keepEmpty`, a user's is given as {@link NO_TEXT} (a message handed to the model must reach it).
 */
function toModelMessages(messages: readonly TranscriptMessage[], keepEmpty = false): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const message of messages) {
    const text = messageText(message);
    if (text.trim() === "") {
      if (keepEmpty && message.role === "user") out.push({ role: "user", content: NO_TEXT });
      continue;
    }
    if (message.role === "assistant") out.push({ role: "assistant", content: text });
    else if (message.role === "user") {
      const from = message.provenance?.sourceSessionKey;
      // Inter-session input is marked before the model sees it, so it is never mistaken for the end user.
      out.push({
        role: "user",
        content: from ? `[message from session ${from}, not from the user]\n${text}` : text,
      });
    }
  }
  return out;
}

/** The schema as providers take it: `$schema` is dropped, since some strict modes reject unknown keywords. */
function providerSchema(schema: Record<string, unknown>): Parameters<typeof jsonSchema>[0] {
  const { $schema: _dialect, ...rest } = schema;
  return rest as Parameters<typeof jsonSchema>[0];
}

/**
 * Queue modes `steer` / `steer-backlog`: before each model call after the first (a boundary: the previous step's
 * tool calls are answered), the users' messages that arrived meanwhile join the conversation. The SDK rebuilds a
 * step's messages from the first ones and the responses so far, so each taken message is put back, at the place
 * it was taken, on every later step.
 */
function steerBetweenSteps(request: AgentRunRequest, initialCount: number) {
  const takeSteering = request.takeSteering;
  if (takeSteering === undefined) return undefined;
  const taken: { after: number; messages: ModelMessage[] }[] = [];
  return async ({ stepNumber, messages }: { stepNumber: number; messages: ModelMessage[] }) => {
    if (stepNumber === 0) return undefined;
    // Each steered message was taken from its own run: it reaches the model even without text.
    const arrived = toModelMessages(await takeSteering(), true);
    if (arrived.length > 0) taken.push({ after: messages.length - initialCount, messages: arrived });
    if (taken.length === 0) return undefined;
    const responses = messages.slice(initialCount);
    const out = messages.slice(0, initialCount);
    let at = 0;
    for (const group of taken) {
      out.push(...responses.slice(at, group.after), ...group.messages);
      at = group.after;
    }
    out.push(...responses.slice(at));
    return { messages: out };
  };
}

/** An `AgentRunner` on the Vercel AI SDK: any provider model, the gateway's tools, streamed text deltas and usage. */
export function createAiSdkRunner(options: AiSdkRunnerOptions): AgentRunner {
  return {
    ...(options.models === undefined ? {} : { models: options.models }),
    steering: true,
    async run(request: AgentRunRequest): Promise<AgentRunResult> {
      const model =
        typeof options.model === "function"
          ? options.model({
              agentId: request.agentId,
              ...(request.model === undefined ? {} : { model: request.model }),
            })
          : options.model;
      const tools: ToolSet = {};
      for (const t of request.tools) {
        tools[t.name] = tool({
          description: t.description,
          inputSchema: jsonSchema(providerSchema(t.jsonSchema)),
          execute: async (input) => t.execute(input),
        });
      }
      const agentSystem =
        typeof options.system === "function" ? options.system(request.agentId) : options.system;
      const system = [agentSystem, ...request.system]
        .filter((s): s is string => typeof s === "string" && s !== "")
        .join("\n\n");
      const messages = toModelMessages(request.messages);
      // A first message without text (an attachment, say) still reaches the model instead of failing the run.
      if (messages.length === 0) messages.push({ role: "user", content: NO_TEXT });
      const prepareStep = steerBetweenSteps(request, messages.length);
      const result = streamText({
        model,
        ...(system === "" ? {} : { system }),
        messages,
        tools,
        ...(prepareStep === undefined ? {} : { prepareStep }),
        stopWhen: stepCountIs(options.maxSteps ?? 8),
        abortSignal: request.signal,
        // Errors are rethrown from the stream below; this only keeps the SDK from logging them as well.
        onError: () => {},
      });
      for await (const part of result.fullStream) {
        if (part.type === "text-delta") {
          if (part.text !== "") request.emit({ type: "text-delta", text: part.text });
        } else if (part.type === "finish-step") {
          // Counted as it goes: a run that fails or is stopped later still counts what its steps used.
          request.emit({ type: "usage", usage: runUsage(part.usage) });
        } else if (part.type === "error") {
          // streamText reports model and tool-loop errors as stream parts, not rejections: fail the run.
          throw part.error;
        } else if (part.type === "abort") {
          throw request.signal.reason ?? new Error("run aborted");
        }
      }
      const reply = await result.text;
      return { reply, usage: runUsage(await result.totalUsage) };
    },
  };
}

/** The AI SDK's token counts as a run's usage (only the counts it knows). */
function runUsage(usage: {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  totalTokens?: number | undefined;
}): RunUsage {
  return {
    ...(usage.inputTokens === undefined ? {} : { inputTokens: usage.inputTokens }),
    ...(usage.outputTokens === undefined ? {} : { outputTokens: usage.outputTokens }),
    ...(usage.totalTokens === undefined ? {} : { totalTokens: usage.totalTokens }),
  };
}
