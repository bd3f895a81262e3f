import {
  type ChannelStreamV1,
  type Logger,
  resolveSendPolicy,
  resolveStreaming,
  SessionsError,
  type StreamingMode,
  streamedParts,
  streamingLimit,
} from "@sessions/core";
import type { DeliveryTarget } from "../adapter.js";
import type { Clock } from "../clock.js";
import type { EnqueueDelivery, GatewayContext } from "../context.js";
import type { AgentRunEvent } from "../runner/types.js";
import type { RunRecord, StoredEntry, StreamPreview } from "../store/types.js";

/** How long a stream's end waits for its request under way (what that request posts is then not recorded). */
const CLOSE_WAIT_MS = 10_000;

/** A reply streaming into its chat while its run writes it (`channels.<id>.streaming`). */
export interface ReplyStream {
  /** One of the run's runner events: text deltas grow the reply; a tool call or a finished step starts it over. */
  push(event: AgentRunEvent): void;
  /** Stops: waits for the request under way (and the recording of what it posted); the messages posted, if any. */
  close(): Promise<StreamPreview | undefined>;
}

/** What one reply stream needs: the adapter's stream, where, how, and where to record the messages it posts. */
export interface ReplyStreamOptions {
  stream: ChannelStreamV1;
  target: DeliveryTarget;
  mode: Exclude<StreamingMode, "off">;
  /** Names the stream's drafts (the run's id). */
  streamId: string;
  clock: Clock;
  logger: Logger;
  /** Messages an earlier attempt of the run posted (it ran again after its gateway lost the store): edited, not posted anew. */
  adopted?: readonly string[] | undefined;
  /** Records the messages posted so far, once another is posted (the run's record; a crash then cleans them up). */
  record(preview: StreamPreview): Promise<void>;
  /**
   * Whether the run may still act (not stopped, its lane still this gateway's): asked before every request, so a
   * gateway that lost its lane — another runs the run now — never edits what that one streams.
   */
  live?: (() => boolean) | undefined;
}

/** The target a preview's messages are in (a target's own fields, nothing else). */
export function previewTarget(preview: DeliveryTarget): DeliveryTarget {
  return {
    channel: preview.channel,
    to: preview.to,
    ...(preview.accountId === undefined ? {} : { accountId: preview.accountId }),
    ...(preview.threadId === undefined ? {} : { threadId: preview.threadId }),
  };
}

/** Whether two targets are the same conversation. */
export function sameTarget(a: DeliveryTarget, b: DeliveryTarget): boolean {
  return a.channel === b.channel && a.to === b.to && a.accountId === b.accountId && a.threadId === b.threadId;
}

/**
 * Streams one reply: after each change of the text, the first message that differs from what it should show is
 * brought up to date — edited, or posted (or, for the open last one where the platform has drafts, drafted) — one
 * request at a time, no sooner than the adapter's `intervalMs` after the last (or a rate limit's `retryAfterMs`);
 * the latest text wins. A refusal stops the stream (the reply's delivery still ends it right).
 */
export function createReplyStream(options: ReplyStreamOptions): ReplyStream {
  const { stream, target, mode, clock, logger } = options;
  const ids = [...(options.adopted ?? [])];
  // What each posted message shows; an adopted one's text is not known, so it is edited first thing.
  const shown: (string | undefined)[] = ids.map(() => undefined);
  let text = "";
  let startOver = false;
  let drafts = stream.draft !== undefined;
  let drafted: string | undefined;
  let busy: Promise<void> | undefined;
  let timer: unknown;
  let nextAt = 0;
  let closed = false;
  let stopped = false;

  const preview = (): StreamPreview => ({
    ...previewTarget(target),
    messageIds: [...ids],
    maxChars: streamingLimit(mode, stream.maxMessageLength),
  });

  async function post(part: string): Promise<boolean> {
    const id = await stream.post(target, part);
    ids.push(id);
    shown.push(part);
    await options.record(preview()).catch((error: unknown) =>
      logger.warn("could not record a streamed reply's message", {
        streamId: options.streamId,
        error: String(error),
      }),
    );
    return true;
  }

  /** Drafts `part`; false when the platform has no drafts there (nothing was asked of it: no wait after). */
  async function draft(part: string): Promise<boolean> {
    if (await stream.draft?.(target, options.streamId, part)) {
      drafted = part;
      return true;
    }
    drafts = false;
    return false;
  }

  /** The one request that brings the chat closest to the text, if any is due; resolves with whether it was made. */
  function nextRequest(): (() => Promise<boolean>) | undefined {
    const parts = streamedParts(text, mode, stream.maxMessageLength);
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as string;
      if (i < ids.length) {
        if (shown[i] !== part) {
          const id = ids[i] as string;
          return async () => {
            await stream.edit(target, id, part);
            shown[i] = part;
            return true;
          };
        }
        continue;
      }
      if (drafts && i === parts.length - 1) return drafted === part ? undefined : () => draft(part);
      return () => post(part);
    }
    return undefined;
  }

  function kick(): void {
    if (closed || stopped || busy !== undefined || timer !== undefined) return;
    const wait = nextAt - clock.now();
    if (wait > 0) {
      timer = clock.setTimeout(() => {
        timer = undefined;
        kick();
      }, wait);
      return;
    }
    if (options.live?.() === false) {
      stopped = true;
      return;
    }
    const request = nextRequest();
    if (request === undefined) {
      // Nothing to show yet (a block not whole): the text is looked at again after a pause, not at every delta.
      nextAt = clock.now() + stream.intervalMs;
      return;
    }
    busy = request()
      .then(
        (made) => {
          if (made) nextAt = clock.now() + stream.intervalMs;
        },
        (error: unknown) => {
          const retryAfter = SessionsError.isInstance(error) ? error.retryAfterMs : undefined;
          if (typeof retryAfter === "number" && retryAfter >= 0) {
            nextAt = clock.now() + Math.max(retryAfter, stream.intervalMs);
            return;
          }
          stopped = true;
          logger.warn("stopped streaming a reply; it is delivered whole when its run ends", {
            streamId: options.streamId,
            channel: target.channel,
            error: error instanceof Error ? error.message : String(error),
          });
        },
      )
      .finally(() => {
        busy = undefined;
        kick();
      });
  }

  return {
    push(event) {
      if (event.type === "text-delta") {
        if (startOver) {
          text = "";
          startOver = false;
        }
        text += event.text;
        kick();
      } else if ((event.type === "tool-call" || event.type === "usage") && text !== "") {
        // The reply is the last step's text: a step that calls a tool, or ends, leaves its text behind.
        startOver = true;
      }
    },
    async close() {
      closed = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      // The request under way, but not forever: a platform call that never answers does not hold the run's end.
      let bound: unknown;
      await Promise.race([
        busy,
        new Promise<void>((resolve) => {
          bound = clock.setTimeout(resolve, CLOSE_WAIT_MS);
        }),
      ]);
      clock.clearTimeout(bound);
      // Only now is what each message shows final: the previews recorded while it streamed leave it out.
      return ids.length > 0 ? { ...preview(), shown: shown.map((part) => part ?? null) } : undefined;
    },
  };
}

/**
 * The stream of `run`'s reply, when its reply goes to a chat whose adapter streams and whose mode
 * (`resolveStreaming`, else the adapter's default) is not `off`, and the send policy lets it through.
 */
export function openReplyStream(
  ctx: Pick<GatewayContext, "channels" | "config" | "clock" | "logger">,
  run: RunRecord,
  entry: StoredEntry | undefined,
  record: (preview: StreamPreview) => Promise<void>,
  live?: () => boolean,
): ReplyStream | undefined {
  const to = run.deliverTo;
  if (to?.channel === undefined || to.to === undefined) return undefined;
  const stream = ctx.channels.adapters.get(to.channel)?.stream;
  if (stream === undefined) return undefined;
  const mode = resolveStreaming(ctx.config, to.channel, to.accountId) ?? stream.defaultMode;
  if (mode === "off") return undefined;
  const policy = ctx.config.session.sendPolicy;
  if (resolveSendPolicy({ policy, entry, key: run.sessionKey, channel: to.channel }) === "deny")
    return undefined;
  const target = to as DeliveryTarget;
  const adopted = run.stream !== undefined && sameTarget(previewTarget(run.stream), target);
  return createReplyStream({
    stream,
    target,
    mode,
    streamId: run.runId,
    clock: ctx.clock,
    logger: ctx.logger,
    ...(adopted ? { adopted: run.stream?.messageIds } : {}),
    record,
    ...(live === undefined ? {} : { live }),
  });
}

/** The delivery that removes the messages a run's reply streamed into, when the run ends with no reply to show. */
export function previewRemoval(run: RunRecord): EnqueueDelivery | undefined {
  const preview = run.stream;
  if (preview === undefined || preview.messageIds.length === 0) return undefined;
  return {
    idempotencyKey: `reply:${run.runId}`,
    kind: "reply",
    sessionKey: run.sessionKey,
    runId: run.runId,
    target: previewTarget(preview),
    text: "",
    stream: preview,
  };
}
