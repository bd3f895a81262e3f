import { rmSync } from "node:fs";
import { createScriptedRunner } from "@sessions/gateway";
import { demoAgents } from "@sessions/testing/demo";
import { playRecordedStory, STORY_RECORDING } from "./story-replay.js";

// Records the demo story with the demo's scripted agents (a real model's exchange is recorded the same way, with
// `sessions-gateway serve --record <file>` or `createGateway({ record })`), for `story-replay.test.ts`.
rmSync(STORY_RECORDING, { force: true });
await playRecordedStory({ runner: createScriptedRunner({ agents: demoAgents() }), record: STORY_RECORDING });
console.log(`recorded the demo story to ${STORY_RECORDING}`);
