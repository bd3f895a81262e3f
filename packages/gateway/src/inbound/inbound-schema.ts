import { type InboundMessage, parseTraceparent, toSessionsError } from "@sessions/core";
import { z } from "zod";

const idText = z.union([z.string(), z.number().finite()]).transform((v) => String(v).trim());
const id = idText.pipe(z.string().min(1).max(1024));

/** What an adapter may hand `gateway.receive`; ids may be numbers (Telegram) and are kept as text. */
const InboundMessageSchema = z.object({
  channel: z.string().trim().min(1).max(64),
  accountId: z.string().trim().min(1).max(256).optional(),
  chatType: z.enum(["direct", "group", "channel"]),
  peerId: id,
  senderId: id,
  senderName: z.string().max(256).optional(),
  isOwner: z.boolean().optional(),
  // A colon would split the key: thread ids keep everything else as sent.
  threadId: id.transform((v) => v.replace(/:/g, "_")).optional(),
  threadKind: z.enum(["thread", "topic"]).optional(),
  parentId: id.optional(),
  to: z.string().trim().min(1).max(1024),
  text: z.string().max(256 * 1024),
  messageId: id.optional(),
  displayName: z.string().max(256).optional(),
  agentId: z.string().trim().min(1).max(64).optional(),
  // Platform metadata: one that is not a W3C traceparent is ignored (as the spec says), never the message.
  traceparent: z
    .unknown()
    .transform((v) => (typeof v === "string" && parseTraceparent(v) !== undefined ? v : undefined))
    .optional(),
});

/** Validates an adapter's message; bad input is `invalid_params` naming the field. */
export function validateInbound(raw: InboundMessage): InboundMessage {
  const parsed = InboundMessageSchema.safeParse(raw);
  if (!parsed.success) throw toSessionsError(parsed.error, "invalid_params", "Invalid inbound message");
  return parsed.data as InboundMessage;
}
