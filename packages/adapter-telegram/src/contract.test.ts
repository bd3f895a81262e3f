import { createFakeTelegramApi } from "@sessions/testing";
import { describeChannelAdapterContract } from "@sessions/testing/contract";
import { Bot } from "grammy";
import { createTelegramAdapter } from "./index.js";

describeChannelAdapterContract("telegram (grammY + fake Bot API)", async () => {
  const api = await createFakeTelegramApi();
  const bot = new Bot(api.token, { client: { apiRoot: api.apiRoot } });
  await bot.init();
  return {
    adapter: createTelegramAdapter({ bot }),
    chat: { channel: "telegram", to: "424242" },
    threadParent: { channel: "telegram", to: "-100900800700" },
    sent: () =>
      api
        .callsOf("sendMessage")
        .filter((c) => c.status === 200)
        .map((c) => ({
          to: String(c.params.chat_id),
          ...(c.params.message_thread_id === undefined
            ? {}
            : { threadId: String(c.params.message_thread_id) }),
          text: String(c.params.text),
        })),
    rateLimitNextSend: (seconds, options) =>
      api.failNext(
        "sendMessage",
        1,
        {
          error_code: 429,
          description: `Too Many Requests: retry after ${seconds}`,
          parameters: { retry_after: seconds },
        },
        options,
      ),
    refuseNextSend: () =>
      api.failNext("sendMessage", 1, { error_code: 400, description: "Bad Request: chat not found" }),
    shown: (target) => api.messages(target.to).map((m) => m.text),
    close: () => api.close(),
  };
});
