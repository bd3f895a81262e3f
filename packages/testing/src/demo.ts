// The sessions demo's world (agents, people, config, story), on its own entry: shared by `npm run demo` and the
// console's browser tests, and usable to try any client against a gateway with something in it.
export {
  DEMO_CHANNEL,
  DEMO_STORY,
  type DemoAgent,
  type DemoAgentOptions,
  type DemoStep,
  type DemoStoryGateway,
  type DemoTurn,
  demoAgents,
  demoAlice,
  demoConfig,
  demoRoom,
  playDemoStory,
  waitForIdle,
} from "./demo-story.js";
