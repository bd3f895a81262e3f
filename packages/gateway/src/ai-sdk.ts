export { type AiSdkRunnerOptions, createAiSdkRunner } from "./runner/ai-sdk.js";
