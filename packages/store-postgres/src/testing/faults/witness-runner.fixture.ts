/**
 * The runner a `sessions-gateway serve --runner <this file>` child loads in a fault test (TypeScript: start the
 * child with `node --import tsx`): a `witnessRunner` writing to `WITNESS_FILE` as `GATEWAY_NAME` (default
 * `pid-<pid>`). A message whose text has `slow:<ms>` runs that long; any other, 20 ms.
 */

import { messageText } from "@sessions/gateway";
import { slowDuration, witnessRunner } from "./witness.js";

const file = process.env.WITNESS_FILE;
if (file === undefined || file === "") throw new Error("witness-runner.fixture: WITNESS_FILE is required");

export default witnessRunner({
  file,
  gateway: process.env.GATEWAY_NAME || `pid-${process.pid}`,
  durationMs: (request) => slowDuration(messageText(request.input)),
});
