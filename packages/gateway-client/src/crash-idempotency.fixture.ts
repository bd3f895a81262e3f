// A gateway process for the exactly-once test, SIGKILLed by it at random moments:
// node --import tsx crash-idempotency.fixture.ts <db> <token>
import { createGateway, createScriptedRunner, createSqliteStore, type SessionStore } from "@sessions/gateway";

const [path, token] = process.argv.slice(2) as [string, string];

const WRITES = [
  "transaction",
  "putEntry",
  "appendMessage",
  "putRun",
  "enqueueDelivery",
  "putDelivery",
  "putRoute",
] as const;

/**
 * Storage that answers a little late after each commit, as a loaded host or a networked store does. It widens
 * the gap between two commits of one request, so a random kill often lands between them; it changes no result.
 */
function withSlowCommits(store: SessionStore): SessionStore {
  const slow: Record<string, unknown> = { ...store };
  for (const name of WRITES) {
    const write = store[name] as (...args: unknown[]) => Promise<unknown>;
    slow[name] = async (...args: unknown[]) => {
      const result = await write.apply(store, args);
      await new Promise((resolve) => setTimeout(resolve, 1 + Math.floor(Math.random() * 3)));
      return result;
    };
  }
  return slow as unknown as SessionStore;
}

const gateway = createGateway({
  store: withSlowCommits(createSqliteStore({ path })),
  runner: createScriptedRunner({
    agents: {
      main: async (turn) => {
        await turn.sleep(5);
        return `echo: ${turn.text}`;
      },
    },
  }),
});
const server = await gateway.listen({ port: 0, auth: { token } });
process.stdout.write(`listening ${server.port}\n`);
