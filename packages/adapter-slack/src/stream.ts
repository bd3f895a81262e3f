import type { ChannelStreamV1, DeliveryTarget, SessionsError, StreamingMode } from "@sessions/core";
import { escapeMrkdwn } from "./mrkdwn.js";
import type { SlackWorkspace } from "./workspaces.js";

/** What the Slack stream needs: the workspace a target is in, its channel id, the pace, and the error mapping. */
export interface SlackStreamOptions {
  intervalMs: number;
  defaultMode: StreamingMode;
  maxMessageLength: number;
  workspace(accountId: string | undefined): Promise<SlackWorkspace>;
  channelId(to: string): string;
  toError(error: unknown, what?: string): SessionsError;
}

/** What Slack's refusal says (`message_not_found`, …), if it refused. */
const slackError = (error: SessionsError) =>
  (error.details as { slackError?: unknown } | undefined)?.slackError;

/**
 * Streams replies into Slack: a message posted (in the thread, when the reply goes to one), updated with
 * `chat.update` as the reply grows, deleted with `chat.delete` when not needed. Text is escaped as deliveries are
 * (`&`, `<`, `>`), so model output never pings anyone.
 */
export function createSlackStream(options: SlackStreamOptions): ChannelStreamV1 {
  async function call<T>(
    target: DeliveryTarget,
    what: string,
    run: (ws: SlackWorkspace, channel: string) => Promise<T>,
  ): Promise<T> {
    try {
      const ws = await options.workspace(target.accountId);
      return await run(ws, options.channelId(target.to));
    } catch (error) {
      throw options.toError(error, what);
    }
  }
  return {
    defaultMode: options.defaultMode,
    intervalMs: options.intervalMs,
    maxMessageLength: options.maxMessageLength,
    post: (target, text) =>
      call(target, "the message", async (ws, channel) => {
        const sent = await ws.client.chat.postMessage({
          channel,
          text: escapeMrkdwn(text),
          ...(target.threadId === undefined ? {} : { thread_ts: target.threadId }),
          unfurl_links: false,
          unfurl_media: false,
        });
        return String(sent.ts);
      }),
    edit: (target, ts, text) =>
      call(target, "the edit", async (ws, channel) => {
        await ws.client.chat.update({ channel, ts, text: escapeMrkdwn(text) });
      }),
    async remove(target, ts) {
      await call(target, "the removal", async (ws, channel) => {
        await ws.client.chat.delete({ channel, ts });
      }).catch((error: SessionsError) => {
        if (slackError(error) !== "message_not_found") throw error;
      });
    },
  };
}
