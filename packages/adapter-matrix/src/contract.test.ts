import { createFakeMatrixHomeserver } from "@sessions/testing";
import { describeChannelAdapterContract } from "@sessions/testing/contract";
import { createClient } from "matrix-js-sdk";
import { logger } from "matrix-js-sdk/lib/logger.js";
import { createMatrixAdapter } from "./index.js";

logger.setLevel("silent");

describeChannelAdapterContract("matrix (matrix-js-sdk + fake homeserver)", async () => {
  const hs = await createFakeMatrixHomeserver();
  const client = createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId });
  return {
    adapter: createMatrixAdapter({ client }),
    chat: { channel: "matrix", to: hs.rooms.dm },
    threadParent: { channel: "matrix", to: `group:${hs.rooms.ops}` },
    sent: () =>
      hs.sent().map((e) => {
        const relation = e.content["m.relates_to"] as { rel_type?: string; event_id?: string } | undefined;
        return {
          to: e.roomId,
          ...(relation?.rel_type === "m.thread" ? { threadId: String(relation.event_id) } : {}),
          text: String(e.content.body),
        };
      }),
    rateLimitNextSend: (seconds, options) =>
      hs.failNext(
        "send",
        1,
        {
          status: 429,
          errcode: "M_LIMIT_EXCEEDED",
          error: "Too Many Requests",
          retry_after_ms: seconds * 1000,
        },
        options,
      ),
    refuseNextSend: () =>
      hs.failNext("send", 1, { status: 403, errcode: "M_FORBIDDEN", error: "User not in room" }),
    shown: (target) => hs.shown(target.to).map((m) => m.body),
    close: () => hs.close(),
  };
});
