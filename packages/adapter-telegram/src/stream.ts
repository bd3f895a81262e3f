import type { ChannelStreamV1, SessionsError, StreamingMode } from "@sessions/core";
import type { Bot } from "grammy";

/** What the Telegram stream needs: the bot, the pace, and how a target reads as a chat and a topic. */
export interface TelegramStreamOptions {
  bot: Bot;
  intervalMs: number;
  defaultMode: StreamingMode;
  maxMessageLength: number;
  /** Drafts (`sendMessageDraft`) in private chats (default true). */
  drafts: boolean;
  chatId(to: string): string;
  threadOptions(threadId: string | undefined): { message_thread_id?: number };
  toError(error: unknown): SessionsError;
}

/** What a Bot API refusal says, lower-cased ("" for anything else). */
const refusal = (error: unknown) =>
  String((error as { description?: unknown } | undefined)?.description ?? "").toLowerCase();

/** A draft's id: a positive 31-bit integer from the stream's id (Telegram wants a non-zero integer). */
function draftId(streamId: string): number {
  let hash = 0;
  for (let i = 0; i < streamId.length; i++) hash = (Math.imul(hash, 31) + streamId.charCodeAt(i)) | 0;
  return hash & 0x7fffffff || 1;
}

/**
 * Streams replies into Telegram as plain text: in private chats as a draft (`sendMessageDraft`, Bot API 9.5; the
 * reply's `sendMessage` replaces it), elsewhere as a message edited (`editMessageText`) as the reply grows.
 */
export function createTelegramStream(options: TelegramStreamOptions): ChannelStreamV1 {
  const { bot, toError } = options;
  const mapped = async <T>(
    call: () => Promise<T>,
    fine?: (description: string) => boolean,
  ): Promise<T | undefined> => {
    try {
      return await call();
    } catch (error) {
      if (fine?.(refusal(error))) return undefined;
      throw toError(error);
    }
  };
  const stream: ChannelStreamV1 = {
    defaultMode: options.defaultMode,
    intervalMs: options.intervalMs,
    maxMessageLength: options.maxMessageLength,
    async post(target, text) {
      const sent = await mapped(() =>
        bot.api.sendMessage(options.chatId(target.to), text, {
          ...options.threadOptions(target.threadId),
          link_preview_options: { is_disabled: true },
        }),
      );
      return String(sent?.message_id);
    },
    async edit(target, messageId, text) {
      await mapped(
        () =>
          bot.api.editMessageText(options.chatId(target.to), Number(messageId), text, {
            link_preview_options: { is_disabled: true },
          }),
        // The same text again changes nothing, and Telegram says so.
        (description) => description.includes("message is not modified"),
      );
    },
    async remove(target, messageId) {
      await mapped(
        () => bot.api.deleteMessage(options.chatId(target.to), Number(messageId)),
        (description) => description.includes("message to delete not found"),
      );
    },
  };
  if (!options.drafts) return stream;
  return {
    ...stream,
    async draft(target, streamId, text) {
      const chatId = Number(options.chatId(target.to));
      // Drafts are for private chats only (a user's id: positive).
      if (!(chatId > 0)) return false;
      await mapped(() =>
        bot.api.sendMessageDraft(chatId, draftId(streamId), text, options.threadOptions(target.threadId)),
      );
      return true;
    },
  };
}
