import { playStory } from "./story.js";

try {
  await playStory();
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
