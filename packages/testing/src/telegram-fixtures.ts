import forumGeneral from "./fixtures/telegram/forum-general-text.json";
import forumTopic from "./fixtures/telegram/forum-topic-text.json";
import groupReplyChain from "./fixtures/telegram/group-reply-chain.json";
import group from "./fixtures/telegram/group-text.json";
import otherBot from "./fixtures/telegram/other-bot-text.json";
import privateText from "./fixtures/telegram/private-text.json";

/** Recorded, sanitised Telegram updates (ids and names replaced). */
const FIXTURES = {
  "private-text": privateText,
  "group-text": group,
  "forum-topic-text": forumTopic,
  "forum-general-text": forumGeneral,
  "group-reply-chain": groupReplyChain,
  "other-bot-text": otherBot,
} as const;

/** The name of a recorded Telegram update (`private-text`, `forum-topic-text`, …). */
export type TelegramFixtureName = keyof typeof FIXTURES;

let nextUpdateId = 200_000_000;

/**
 * A fresh copy of a recorded update with a new `update_id` (and `message_id`), optionally with message fields
 * overridden (`text`, `from`, `chat`, `message_thread_id`, …).
 */
export function telegramUpdate(
  name: TelegramFixtureName,
  message: Record<string, unknown> = {},
): Record<string, unknown> {
  const base = structuredClone(FIXTURES[name]) as { update_id: number; message: Record<string, unknown> };
  const id = nextUpdateId++;
  return { update_id: id, message: { ...base.message, message_id: id, ...message } };
}
