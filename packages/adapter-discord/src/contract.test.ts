import { createFakeDiscordApi } from "@sessions/testing";
import { describeChannelAdapterContract } from "@sessions/testing/contract";
import { createDiscordAdapter } from "./index.js";
import { loggedInClient } from "./test-kit.js";

describeChannelAdapterContract("discord (discord.js + fake API)", async () => {
  const api = await createFakeDiscordApi({ echoOwnMessages: false });
  const client = await loggedInClient(api, { rejectOnRateLimit: () => true });
  const general = api.guild.general.id;
  return {
    adapter: createDiscordAdapter({ client }),
    chat: { channel: "discord", to: `channel:${general}` },
    threadParent: { channel: "discord", to: `channel:${general}` },
    sent: () =>
      api
        .callsOf("POST", "/channels/:id/messages")
        .filter((c) => c.status === 200)
        .map((c) => {
          const id = c.path.split("/")[2] as string;
          const body = c.body as { content?: string };
          return {
            to: `channel:${id}`,
            ...(id === general ? {} : { threadId: id }),
            text: String(body.content),
          };
        }),
    rateLimitNextSend: (seconds, options) =>
      api.failNext("POST /channels/:id/messages", 1, { status: 429, retryAfterSeconds: seconds }, options),
    refuseNextSend: () =>
      api.failNext("POST /channels/:id/messages", 1, {
        status: 403,
        code: 50013,
        message: "Missing Permissions",
      }),
    shown: () =>
      api
        .messages(general)
        .filter((m) => m.authorId === api.botUser.id)
        .map((m) => m.content),
    async close() {
      await client.destroy();
      await api.close();
    },
  };
});
