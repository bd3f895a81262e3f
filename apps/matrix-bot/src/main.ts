// A Matrix bot with session tools. Real: MATRIX_HOMESERVER_URL=… MATRIX_ACCESS_TOKEN=… MATRIX_USER_ID=…
//   pnpm --filter matrix-bot start [-- --runner ./runner.js]   (MATRIX_OWNER_IDS=@you:example.org for /send)
// Offline: pnpm --filter matrix-bot start -- --fake  (a fake homeserver on 127.0.0.1 plays a short conversation)
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createMatrixAdapter } from "@sessions/adapter-matrix";
import {
  type AgentRunner,
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  createSqliteStore,
} from "@sessions/gateway";
import { createFakeMatrixHomeserver, matrixEvent } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { ClientEvent, createClient, SyncState } from "matrix-js-sdk";
import { logger as sdkLogger } from "matrix-js-sdk/lib/logger.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const { values } = parseArgs({ args, options: { fake: { type: "boolean" }, runner: { type: "string" } } });
const fake = values.fake ? await createFakeMatrixHomeserver() : undefined;
const baseUrl = fake?.baseUrl ?? process.env.MATRIX_HOMESERVER_URL;
const accessToken = fake?.accessToken ?? process.env.MATRIX_ACCESS_TOKEN;
const userId = fake?.userId ?? process.env.MATRIX_USER_ID;
if (!baseUrl || !accessToken || !userId) {
  throw new Error("set MATRIX_HOMESERVER_URL, MATRIX_ACCESS_TOKEN and MATRIX_USER_ID, or pass --fake");
}
sdkLogger.setLevel(fake ? "silent" : "warn");

// Any AgentRunner works, e.g. createAiSdkRunner({ model }) from "@sessions/gateway/ai-sdk" in a --runner module.
const runner: AgentRunner = values.runner
  ? (await import(pathToFileURL(resolve(values.runner)).href)).default
  : createScriptedRunner({ agents: {}, fallback: (turn) => turn.write(`You said: ${turn.text}`) });

const client = createClient({ baseUrl, accessToken, userId });
const ownerIds = (process.env.MATRIX_OWNER_IDS ?? "").split(",").filter((id) => id.startsWith("@"));
const adapter = createMatrixAdapter({ client, ownerIds, autoJoin: true });
const store = fake
  ? createMemoryStore()
  : createSqliteStore({ path: process.env.SESSIONS_DB ?? ".sessions/matrix-bot.db" });
// Replies stream into Matrix as they are written: one message, replaced as it grows (Matrix's default is off).
const config = { channels: { matrix: { streaming: "partial" as const } } };
const gateway = createGateway({ store, runner, adapters: [adapter], config });
adapter.attach(gateway);
const prepared = new Promise<void>((done) => {
  client.on(ClientEvent.Sync, (state: SyncState) => {
    if (state !== SyncState.Prepared) return;
    console.log(`${userId} is listening`);
    done();
  });
});
// Instead of client.startClient(): the gateway syncs while it holds the bot's lease (at once here).
gateway.holdConnection(adapter.connection);

if (fake) {
  await prepared;
  for (const [room, name, text] of [
    [fake.rooms.dm, "dm-text", "hello bot"],
    [fake.rooms.ops, "room-text", "any news?"],
  ] as const) {
    fake.post(room, matrixEvent(name, { content: { body: text } }));
    console.log(`user → ${text}`);
    // One at a time, so the transcript below reads in order; fails (after 60 s) if the whole reply never shows.
    const reply = `You said: ${text}`;
    await eventually(() => fake.shown(room).some((m) => m.body === reply), `the bot's reply to "${text}"`);
  }
  for (const room of [fake.rooms.dm, fake.rooms.ops])
    for (const m of fake.shown(room))
      console.log(`bot → ${m.body} (room ${room}${m.edits > 0 ? ", streamed" : ""})`);
  adapter.detach();
  await gateway.close(); // stops the sync it holds and gives the lease up
  await fake.close();
  // matrix-js-sdk leaves each request's timeout timer running (up to 110 s) after stopClient: exit explicitly.
  process.exit(0);
} else {
  const stop = async () => {
    adapter.detach();
    await gateway.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
