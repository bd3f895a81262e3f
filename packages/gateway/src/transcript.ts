import type { TranscriptMessage } from "@sessions/core";

/** The plain text of a message: its string content, or its text parts joined. */
export function messageText(message: Pick<TranscriptMessage, "content"> | undefined): string {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : ""))
    .filter((t) => t !== "")
    .join("\n");
}

export function isToolMessage(message: Pick<TranscriptMessage, "role">): boolean {
  return message.role === "toolResult" || message.role === "tool";
}

/** A compact text form of a tool result for announces and previews. */
export function toolResultText(message: TranscriptMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  const parts = content.map((part) => {
    if (part.type === "text" && typeof part.text === "string") return part.text;
    if ("output" in part) return typeof part.output === "string" ? part.output : JSON.stringify(part.output);
    return "";
  });
  return parts.filter((p) => p !== "").join("\n");
}
