export { type OptionValues, parseCommandArgs, usageError } from "./args.js";
export { commandHelp, groupHelp, rootHelp } from "./help.js";
export { type CliIo, describeError, exitCodeOf, runCli } from "./run.js";
export { readConfigFile } from "./serve.js";
export { toolRow } from "./sessions.js";
export {
  COMMANDS,
  type CommandSpec,
  DEFAULT_URL,
  ENVIRONMENT,
  EXIT_CODES,
  type OptionSpec,
  SERVE,
} from "./spec.js";
export { formatTable } from "./table.js";
export { VERSION } from "./version.js";
