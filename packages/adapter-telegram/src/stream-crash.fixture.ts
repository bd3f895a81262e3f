// A gateway process with a Telegram adapter (real grammY, HTTP pointed at a fake Bot API in the test), killed with
// SIGKILL by the test mid-stream. Prints one JSON line per step.
// Run: node --import tsx stream-crash.fixture.ts <db-path> <api-root> <token> <mode: stream | end | recover> [update]
import { createGateway, createScriptedRunner, createSqliteStore } from "@sessions/gateway";
import { Bot } from "grammy";
import type { Update } from "grammy/types";
import { createTelegramAdapter } from "./index.js";

const [path, apiRoot, token, mode, update] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string?,
];
const out = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

const words = Array.from({ length: 40 }, (_, i) => `word${i} `);
const runner = createScriptedRunner({
  agents: {
    main: async (turn) => {
      for (const word of words) {
        turn.say(word);
        await turn.sleep(25);
      }
      // `stream`: the run never ends here (the test kills the process while it writes).
      if (mode === "stream") await turn.sleep(600_000);
      return words.join("").trim();
    },
  },
});

const bot = new Bot(token, { client: { apiRoot } });
await bot.init();
const adapter = createTelegramAdapter({ bot, typing: false, streamIntervalMs: 50 });
const gateway = createGateway({
  store: createSqliteStore({ path }),
  runner,
  adapters: [adapter],
  outbox: { baseDelayMs: 200, maxDelayMs: 400 },
});
adapter.attach(gateway);
await gateway.ready;
// Alive until killed, as a served gateway is (the gateway's own timers do not hold a process open).
setInterval(() => {}, 1 << 30);
out({ ready: true });
if (mode === "recover") {
  const ended = await gateway.store.listRunsByStatus(["ok", "error"]);
  out({ runs: ended.map((run) => ({ status: run.status, error: run.error })) });
}

if (update !== undefined) {
  await bot.handleUpdate(JSON.parse(update) as Update);
  const [run] = await gateway.store.listRunsByStatus(["queued", "running"]);
  const runId = run?.runId as string;
  out({ runId });
  const ended = await gateway.agentWait({ runId, timeoutMs: 60_000 });
  out({ ended: ended.status });
}
