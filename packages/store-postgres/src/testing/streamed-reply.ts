import type { AgentRunner } from "@sessions/gateway";

/** The reply `streamingRunner` writes: 30 words. */
export const STREAMED_REPLY = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ");

/** A runner that writes `STREAMED_REPLY` a word every `ms` (stopping when its run is aborted), as a model streams. */
export function streamingRunner(ms: number): AgentRunner {
  return {
    async run(request) {
      for (const word of STREAMED_REPLY.split(" ")) {
        request.emit({ type: "text-delta", text: `${word} ` });
        await new Promise<void>((resolve, reject) => {
          if (request.signal.aborted) return reject(request.signal.reason);
          const timer = setTimeout(resolve, ms);
          request.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(request.signal.reason);
          });
        });
      }
      return { reply: STREAMED_REPLY };
    },
  };
}
