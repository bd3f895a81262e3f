import { parseArgs } from "node:util";
import { playStory } from "./story.js";

// `npm run demo` plays the story and exits; `npm run demo -- --serve [--port N]` then keeps the gateway running
// with the operator console and web chat at http://127.0.0.1:<port>/ until Ctrl-C.
try {
  const { values } = parseArgs({
    options: { serve: { type: "boolean" }, port: { type: "string" } },
    strict: true,
  });
  const port = values.port === undefined ? 18789 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be 0..65535 (got ${values.port})`);
  const until = new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await playStory(console.log, values.serve ? { serve: { port, until } } : {});
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
