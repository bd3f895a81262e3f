// A gateway server process for the restart tests: node --import tsx gateway-process.fixture.ts <db> <port> <token>
import { createGateway, createScriptedRunner, createSqliteStore } from "@sessions/gateway";

const [path, port, token] = process.argv.slice(2) as [string, string, string];
const gateway = createGateway({
  store: createSqliteStore({ path }),
  runner: createScriptedRunner({
    agents: {
      main: async (turn) => {
        if (turn.text === "slow") await turn.sleep(600_000);
        return `echo: ${turn.text}`;
      },
    },
  }),
});
const server = await gateway.listen({ port: Number(port), auth: { token } });
process.stdout.write(`listening ${server.port}\n`);
const stop = async () => {
  await gateway.close({ drainMs: 1000 });
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
