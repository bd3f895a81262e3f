import type { ChannelAdapterV1 } from "@sessions/gateway";
import { paint } from "./paint.js";

export interface ConsoleMessage {
  to: string;
  threadId?: string;
  kind: string;
  text: string;
}

/** A channel adapter that "delivers" by printing: the demo's stand-in for Discord or Telegram. */
export function createConsoleChannel(
  print: (line: string) => void,
): ChannelAdapterV1 & { sent: ConsoleMessage[] } {
  let threads = 0;
  const sent: ConsoleMessage[] = [];
  return {
    specVersion: 1,
    channel: "console",
    capabilities: { threads: true },
    sent,
    async deliver(target, message) {
      sent.push({
        to: target.to,
        ...(target.threadId ? { threadId: target.threadId } : {}),
        kind: message.kind,
        text: message.text,
      });
      const where = target.threadId ? `${target.to} › thread ${target.threadId}` : target.to;
      const label = paint.dim(`[${message.kind}]`);
      const body = message.text
        .split("\n")
        .map((line, i) => (i === 0 ? line : `      ${line}`))
        .join("\n");
      print(`   ${paint.green("⇢")} ${paint.bold(where)} ${label}\n      ${body}`);
      return { messageIds: [`console-${sent.length}`] };
    },
    async createThread(request) {
      threads++;
      print(
        `   ${paint.magenta("⧉")} created thread ${paint.bold(`#${threads}`)} "${request.name}" under ${request.parent.to}`,
      );
      return { threadId: String(threads) };
    },
  };
}
